// execute_code as any extension or agent calls it: vscode.lm.invokeTool in a real extension host.
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const vscode = require('vscode');
const h = require('./helpers');

const NOTHING_PRINTED =
  'The program ran and printed nothing. Only what the program prints comes back: end it with print(...) of everything you need to see.';

describe('execute_code in the extension host (host)', function () {
  let api;
  let manifest;

  before(async function () {
    api = await h.activate();
    manifest = JSON.parse(fs.readFileSync(path.join(vscode.extensions.getExtension(h.EXTENSION_ID).extensionPath, 'package.json'), 'utf8'));
    await h.setting('image', h.IMAGE);
    await h.setting('timeoutSeconds', undefined);
  });

  after(async function () {
    await h.setting('image', h.IMAGE);
    await h.setting('timeoutSeconds', undefined);
  });

  it('activates and lists execute_code with the schema the manifest declares', function () {
    const tool = vscode.lm.tools.find((t) => t.name === 'execute_code');
    assert.ok(tool, 'execute_code is registered');
    assert.deepEqual(tool.inputSchema, manifest.contributes.languageModelTools[0].inputSchema);
    assert.equal(tool.description, manifest.contributes.languageModelTools[0].modelDescription);
  });

  it('runs a program in the real Docker sandbox and returns the exact text', async function () {
    assert.equal(await h.run('print("hello world")'), 'stdout:\nhello world');
    assert.equal(await h.run('import sys\nprint("out")\nprint("err", file=sys.stderr)\nsys.exit(3)'), 'stdout:\nout\n\nstderr:\nerr\n\nexit code: 3');
    assert.equal(await h.run('x = 1'), NOTHING_PRINTED);
    // It really ran in a sandbox: no network, unprivileged, in a fresh directory under the work area.
    assert.equal(
      await h.run('import os, socket\ntry:\n    socket.create_connection(("1.1.1.1", 53), timeout=2)\nexcept OSError as e:\n    print(type(e).__name__)\nprint(os.getuid(), os.getcwd().startswith("/sandbox/runs/"))'),
      'stdout:\nOSError\n65534 True',
    );
    const calls = api.sandboxes();
    assert.equal(calls.length, 1, 'one sandbox for calls from outside a chat (one per window)');
    assert.equal(calls[0].image, h.IMAGE);
    assert.match(calls[0].sessionKey, /^window:/);
    assert.deepEqual(h.ownContainers().map((l) => l.split(' ')[0]), [calls[0].containerId.slice(0, 12)]);
    // The backend in use and why (also in the status bar and the log).
    const backend = api.backend();
    assert.equal(backend.backend, 'docker');
    assert.equal(backend.reason, 'docker: auto, and the workspace has no Dev Container configuration');
    assert.equal(backend.image, h.IMAGE);
  });

  it('answers invalid input with the model-facing error', async function () {
    await assert.rejects(
      vscode.lm.invokeTool('execute_code', { input: { code: 42 }, toolInvocationToken: undefined }),
      (e) => {
        assert.match(String(e.message), /Invalid execute_code input: `code` must be a string holding the whole Python program\./);
        return true;
      },
    );
    await assert.rejects(
      vscode.lm.invokeTool('execute_code', { input: { code: 'print(1)', shell: true }, toolInvocationToken: undefined }),
      /unknown parameter\(s\): "shell"/,
    );
  });

  it('applies a changed timeout on the next call and reports the timeout', async function () {
    await h.setting('timeoutSeconds', 2);
    const t0 = Date.now();
    const text = await h.run('import time\nprint("started", flush=True)\nwhile True:\n    time.sleep(0.1)');
    assert.equal(
      text,
      'stdout:\nstarted\n\nThe program did not finish within 2 s and was stopped. Make it faster, work on less data, or print partial results as you go.',
    );
    assert.ok(Date.now() - t0 < 15000, 'stopped promptly');
    await h.setting('timeoutSeconds', undefined);
    assert.equal(await h.run('print("still usable")'), 'stdout:\nstill usable');
  });

  it('cancelling the token kills a long program', async function () {
    const cts = new vscode.CancellationTokenSource();
    const pending = h.run('import time\nprint("sleeping", flush=True)\ntime.sleep(120)', { cancellation: cts.token });
    // Cancelled once the program runs (counted from inside its sandbox), however long starting it takes.
    await h.waitFor(() => api.sandboxes().find((s) => h.programProcesses(s.containerId) > 0), 60000, 'the program to start');
    const t0 = Date.now();
    cts.cancel();
    await assert.rejects(pending, (e) => {
      assert.ok(e instanceof vscode.CancellationError || /cancel/i.test(String(e && e.message)), String(e));
      return true;
    });
    assert.ok(Date.now() - t0 < 10000, `cancelled within 10 s (took ${Date.now() - t0} ms)`);
    // Nothing of that program is left running in the sandbox.
    assert.equal(
      await h.run('import os\nleft = []\nfor p in os.listdir("/proc"):\n    if p.isdigit() and int(p) != os.getpid():\n        try:\n            cmd = open(f"/proc/{p}/cmdline", "rb").read()\n        except OSError:\n            continue\n        if b"program.py" in cmd:\n            left.append(cmd)\nprint(left)'),
      'stdout:\n[]',
    );
  });

  it('an invalid setting value is reported, not crashed on', async function () {
    await h.setting('timeoutSeconds', 'soon');
    assert.equal(await h.run('print(2 + 2)'), 'stdout:\n4');
    assert.ok(
      api.settingsProblems().includes('codeactSandbox.timeoutSeconds = "soon" is not valid (Invalid input: expected number, received string); using 120.'),
      JSON.stringify(api.settingsProblems()),
    );
    await h.setting('timeoutSeconds', undefined);
  });

  it('a changed image applies to the next call (the sandbox is replaced)', async function () {
    h.docker('tag', h.IMAGE, h.ALT_IMAGE);
    const before = api.sandboxes()[0].containerId;
    await h.setting('image', h.ALT_IMAGE);
    assert.equal(await h.run('print("on the other image")'), 'stdout:\non the other image');
    const now = api.sandboxes();
    assert.equal(now.length, 1);
    assert.equal(now[0].image, h.ALT_IMAGE);
    assert.notEqual(now[0].containerId, before);
    assert.deepEqual(h.ownContainers(), [`${now[0].containerId.slice(0, 12)} ${h.ALT_IMAGE}`], 'the old sandbox was removed');
    await h.setting('image', h.IMAGE);
  });

  it('an image that cannot be had gives an error naming the setting', async function () {
    await h.setting('image', 'codeact-sandbox/not-there:nope');
    await assert.rejects(
      h.run('print(1)'),
      /The sandbox image "codeact-sandbox\/not-there:nope" is not on this machine and could not be pulled\. Ask the user to pull it, or to set the codeactSandbox\.image setting to an image that has python3\./,
    );
    await h.setting('image', h.IMAGE);
  });
  it('a credential added by its command reaches its bound host and never the program; removing it applies to the next call', async function () {
    this.timeout(10 * 60_000); // on a fresh machine the first network sandbox builds the proxy's image
    const internet = JSON.parse(fs.readFileSync(process.env.CODEACT_SANDBOX_TEST_INTERNET, 'utf8'));
    const bound = internet.names.api;
    const secret = `host-test-${crypto.randomBytes(12).toString('hex')}`;
    const sha = (text) => crypto.createHash('sha256').update(text).digest('hex');
    const prompts = [];
    /** Answers the command's boxes and picks by their titles, recording what each offered. */
    const answer = (answers) =>
      api.answerPrompts((prompt) => {
        prompts.push(prompt.labels ? `${prompt.title}: ${prompt.labels.join(' | ')}` : prompt.title);
        return answers[prompt.title.replace(/^CodeAct Sandbox: /, '')];
      });
    const code = [
      'import os, urllib.request',
      `print(urllib.request.urlopen("https://${bound}/digest", timeout=30).read().decode().strip())`,
      // Spelled backwards here, so that the program's own text (kept with its run) does not hold it.
      `print(${JSON.stringify([...secret].reverse().join(''))}[::-1] in repr(dict(os.environ)))`,
    ].join('\n');
    await h.setting('runtime', 'runc');
    await h.setting('network.allow', ['*.sub.codeact.test']);
    try {
      answer({ 'Add Credential (1/4)': 'hostapi', 'Add Credential (2/4)': secret, 'Add Credential (3/4)': bound, 'Add Credential (4/4)': 'Authorization: Bearer <secret>' });
      await vscode.commands.executeCommand('codeactSandbox.addCredential');
      assert.deepEqual(vscode.workspace.getConfiguration('codeactSandbox').inspect('credentials').globalValue, [{ secret: 'hostapi', hosts: [bound], as: 'bearer' }]);
      // The server saw one Authorization header, the bound one; the program's environment lacks the value.
      const told = `This sandbox has network access to these domains only: *.sub.codeact.test, on ports 80 and 443, through a proxy that urllib, requests, pip and curl use by themselves (HTTP_PROXY and HTTPS_PROXY are set). Every other name is refused.`;
      assert.equal(
        await h.run(code),
        [
          'stdout:',
          `1 ${sha(`Bearer ${secret}`)} 0 ${sha('')}`,
          'False',
          '',
          told,
          '',
          `The proxy adds the user's credentials to HTTPS requests on their way out, for: ${bound} (as Authorization: Bearer). Call those hosts without a key: the program cannot read the value and needs none.`,
        ].join('\n'),
      );

      answer({ 'CodeAct Sandbox credentials (names only)': undefined });
      await vscode.commands.executeCommand('codeactSandbox.listCredentials');
      answer({ 'Remove Credential': 'hostapi' });
      await vscode.commands.executeCommand('codeactSandbox.removeCredential');
      assert.deepEqual(prompts, [
        'CodeAct Sandbox: Add Credential (1/4)',
        'CodeAct Sandbox: Add Credential (2/4)',
        'CodeAct Sandbox: Add Credential (3/4)',
        'CodeAct Sandbox: Add Credential (4/4): Authorization: Bearer <secret> | Authorization: Basic (the secret is user:password) | A header of its own (such as X-Api-Key) | A query parameter (such as ?key=...)',
        'CodeAct Sandbox credentials (names only): hostapi',
        'CodeAct Sandbox: Remove Credential: hostapi',
      ]);
      assert.deepEqual(vscode.workspace.getConfiguration('codeactSandbox').inspect('credentials').globalValue, []);
      // A new sandbox and proxy (its first result tells the network again), without the credential:
      // the bound host is a tunnel again, so the program sees the test server's own certificate.
      const tunnelled = [
        'import ssl, urllib.request',
        `open("test-ca.pem", "w").write(${JSON.stringify(internet.caPem)})`,
        `print(urllib.request.urlopen("https://${bound}/digest", timeout=30, context=ssl.create_default_context(cafile="test-ca.pem")).read().decode().strip())`,
      ].join('\n');
      assert.equal(await h.run(tunnelled), `stdout:\n0 ${sha('')} 0 ${sha('')}\n\n${told}`);

      // Nowhere the engine or the run store shows: inspect and logs of the window's containers (its proxies too), the runs.
      const ids = h.docker('ps', '-aq', '--filter', 'label=dev.codeact-sandbox.managed').split('\n').filter(Boolean);
      // Both streams (the forwarder writes to standard error); a sandbox has none to read (its logging driver is none).
      const logs = (id) => {
        const r = spawnSync('docker', ['logs', id], { encoding: 'utf8' });
        return `${r.stdout}${r.stderr}`;
      };
      for (const id of ids) assert.ok(!h.docker('inspect', id).includes(secret) && !logs(id).includes(secret), `the value is in ${id}`);
      const stored = fs.readdirSync(api.artifactsRoot, { recursive: true }).map((f) => path.join(api.artifactsRoot, f)).filter((f) => fs.statSync(f).isFile());
      assert.ok(stored.length > 0);
      for (const file of stored) assert.ok(!fs.readFileSync(file).includes(secret), `the value is in ${file}`);
    } finally {
      api.answerPrompts(undefined);
      await h.setting('credentials', undefined);
      await h.setting('network.allow', undefined);
      await h.setting('runtime', undefined);
    }
  });

  it('shares a workspace file, saves the declared chart, shows it in the tree and hands the image to the model', async function () {
    const code = [
      'import csv, struct, zlib',
      'total = sum(int(r["amount"]) for r in csv.DictReader(open("sales.csv")))',
      'raw = b"".join(b"\\0" + b"\\x20\\x80\\xff" * 8 for _ in range(8))',
      'c = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))',
      'png = b"\\x89PNG\\r\\n\\x1a\\n" + c(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0)) + c(b"IDAT", zlib.compress(raw)) + c(b"IEND", b"")',
      'open("chart.png", "wb").write(png)',
      'print("total", total)',
    ].join('\n');
    const result = await vscode.lm.invokeTool('execute_code', { input: { code, files: ['sales.csv'], outputs: ['chart.png'] }, toolInvocationToken: undefined });
    const text = h.textOf(result);
    // Then a link to each saved file, which the model can pass on: in the chat it opens the file in VS Code.
    const m = /^stdout:\ntotal 42\n\nSaved for the user in the CodeAct Sandbox view: chart\.png \((\d+) B\)\. The files are not sent to you; describe them or print what you need from them\.\n\nTo show the user a saved file, link to it; in the chat each opens the file in VS Code: \[chart\\\.png\]\(<(file:\/\/\/[^>]+\/chart\.png)>\)\.$/.exec(text);
    assert.ok(m, text);
    assert.ok(fs.existsSync(vscode.Uri.parse(m[2]).fsPath), m[2]);
    const images = result.content.filter((p) => p instanceof vscode.LanguageModelDataPart);
    assert.equal(images.length, 1);
    assert.equal(images[0].mimeType, 'image/png');
    assert.equal(images[0].data.length, Number(m[1]));
    assert.deepEqual([...images[0].data.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);

    const tree = await api.treeSnapshot();
    // A chat is labelled by when it began and its first program; its id is the description.
    const session = tree.find((s) => (s.description || '').startsWith('this window · '));
    assert.ok(session, JSON.stringify(tree));
    const run = session.children[0];
    assert.match(run.label, /^\d{1,2}:\d{2}:\d{2}.* import csv, struct, zlib$/);
    assert.equal(run.description, 'ok · 1 file');
    assert.deepEqual(run.children.map((f) => [f.label, f.description]), [['chart.png', `${m[1]} B`]]);
    assert.ok(run.children[0].resourceUri.startsWith('file://'), run.children[0].resourceUri);
    await vscode.commands.executeCommand('codeactSandbox.artifacts.focus');
    await h.snapshot('artifact-tree');
  });

  it('refuses a file that is not in the workspace with near misses', async function () {
    await assert.rejects(vscode.lm.invokeTool('execute_code', { input: { code: 'print(1)', files: ['sale.csv'] }, toolInvocationToken: undefined }),
      /"sale\.csv" is not in the workspace\. Similar names in the workspace: "sales\.csv", "data\/sales\.csv"\./);
  });

  // Session isolation needs tokens the host issued itself (a made-up token is refused with
  // "Tool called for unknown chat session"), so it is proven through agent mode in agent.test.js.
});
