// The client this product exists for: VS Code's own agent mode (the built-in Copilot Chat agent)
// calling execute_code in its real loop, with a scripted test model standing in for the LLM.
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const vscode = require('vscode');
const h = require('./helpers');

const MODEL_EXTENSION = 'codeact-sandbox-test.scripted-model';

describe('agent mode calls execute_code (host)', function () {
  let api;
  let model;

  // Sends a prompt through the chat view in agent mode. Resolves with the chat result, or with
  // { type: 'confirmation', ... } when the chat stops at a tool confirmation.
  const ask = (query) =>
    vscode.commands.executeCommand('workbench.action.chat.open', { mode: 'agent', modelSelector: model.selector, query, blockOnResponse: true });
  const newChat = async () => {
    await vscode.commands.executeCommand('workbench.action.chat.newChat');
    await h.sleep(300);
  };
  // Results of our own tool calls as they reached the model, once per call (a later request of
  // the same chat repeats the history).
  const toolResults = () => {
    const seen = new Map();
    for (const p of model.requests.flatMap((r) => r.toolResults)) {
      if (String(p.callId).startsWith('codeact-call-') && !seen.has(p.callId)) seen.set(p.callId, p);
    }
    return [...seen.values()];
  };
  const program = (code) => 'Please run this:\n```python\n' + code + '\n```';
  const NODENAME = 'import os\nprint("sandbox", os.uname().nodename)';
  // Docker names a container's host after the start of its id: a program can say where it ran.
  const expectedFor = (sessionKey) => {
    const s = api.sandboxes().find((x) => x.sessionKey === sessionKey);
    assert.ok(s, `a sandbox for ${sessionKey}`);
    return `stdout:\nsandbox ${s.containerId.slice(0, 12)}`;
  };

  before(async function () {
    api = await h.activate();
    await h.setting('image', h.IMAGE);
    await h.setting('confirmBeforeRun', undefined);
    model = await vscode.extensions.getExtension(MODEL_EXTENSION).activate();
    await h.waitFor(async () => (await vscode.lm.selectChatModels(model.selector)).length, 20000, 'the scripted model');
    // A fresh profile disables the built-in Copilot Chat until chat setup ran; the runner seeds the
    // storage key that skips that, and this re-enables it when the seed did not take.
    if (!vscode.extensions.getExtension('GitHub.copilot-chat')) {
      await vscode.commands.executeCommand('workbench.extensions.action.enableAll');
    }
    const copilot = await h.waitFor(() => vscode.extensions.getExtension('GitHub.copilot-chat'), 20000, 'Copilot Chat enabled');
    await h.waitFor(() => copilot.isActive, 60000, 'Copilot Chat active');
    await h.waitFor(() => vscode.lm.tools.some((t) => t.name === 'copilot_readFile'), 60000, "Copilot Chat's agent tools");
    model.reset();
  });

  after(async function () {
    model && model.reset();
    await h.setting('confirmBeforeRun', undefined);
  });

  let firstKey;

  it('runs the program in the real sandbox and hands the exact result to the model', async function () {
    await newChat();
    const res = await ask(program(NODENAME));
    assert.ok(res && res.type !== 'confirmation', JSON.stringify(res));
    assert.equal(model.requests.length, 2, 'tool call round, then the answer');
    assert.ok(model.requests[0].tools.includes('execute_code'), 'execute_code offered to the model');
    const chats = api.sandboxes().filter((s) => s.sessionKey.startsWith('chat:'));
    assert.equal(chats.length, 1);
    firstKey = chats[0].sessionKey;
    // Pin the key extraction against the real token of this VS Code: the chat session resource,
    // whose path is base64(the session id the model sees as its conversation id).
    const m = /^chat:vscode-chat-session:\/\/local\/([A-Za-z0-9+/=_-]+)$/.exec(firstKey);
    assert.ok(m, firstKey);
    assert.equal(Buffer.from(m[1], 'base64').toString('utf8'), model.requests[0].conversationId);
    const results = toolResults();
    assert.equal(results.length, 1);
    assert.equal(results[0].text, expectedFor(firstKey));
    assert.equal(model.requests[1].reply.text, `Tool said: ${expectedFor(firstKey)}`);
    await h.snapshot('chat-after-tool-call');
  });

  it('a second call in the same chat reuses its sandbox', async function () {
    const res = await ask(program(NODENAME));
    assert.ok(res && res.type !== 'confirmation', JSON.stringify(res));
    const results = toolResults();
    assert.equal(results.length, 2);
    assert.equal(results[1].text, results[0].text, 'same container answered');
    assert.equal(api.sandboxes().filter((s) => s.sessionKey.startsWith('chat:')).length, 1);
  });

  it('a new chat gets its own sandbox', async function () {
    await newChat();
    const res = await ask(program(NODENAME));
    assert.ok(res && res.type !== 'confirmation', JSON.stringify(res));
    const chats = api.sandboxes().filter((s) => s.sessionKey.startsWith('chat:'));
    assert.equal(chats.length, 2);
    const second = chats.find((s) => s.sessionKey !== firstKey);
    const results = toolResults();
    assert.equal(results.length, 3);
    assert.equal(results[2].text, expectedFor(second.sessionKey));
    assert.notEqual(results[2].text, results[0].text);
  });

  it('with confirmBeforeRun on, the chat stops at the confirmation and runs once accepted', async function () {
    await h.setting('confirmBeforeRun', true);
    await newChat();
    const before = toolResults().length;
    const res = await ask(program('print("confirmed run")'));
    assert.deepEqual({ type: res.type, toolId: res.toolId }, { type: 'confirmation', toolId: 'execute_code' });
    await h.snapshot('chat-confirmation');
    assert.equal(toolResults().length, before, 'nothing ran before the confirmation');
    await vscode.commands.executeCommand('workbench.action.chat.acceptTool');
    await h.waitFor(() => toolResults().length === before + 1, 30000, 'the result after accepting');
    assert.equal(toolResults()[before].text, 'stdout:\nconfirmed run');
    // "Allow" is remembered per tool for the window; forget it so later chats ask again.
    await vscode.commands.executeCommand('workbench.action.chat.resetTrustedTools');
    await h.setting('confirmBeforeRun', undefined);
  });

  // The README's headline with default settings: the data image, prepared by the extension's own command.
  it('with default settings, the revenue chart from data/sales.csv: the PNG is in the tree and reaches the model as an image', async function () {
    this.timeout(50 * 60_000); // on a fresh machine the command builds the image (minutes)
    await h.setting('image', undefined);
    try {
      const prepared = await vscode.commands.executeCommand('codeactSandbox.prepareImage');
      assert.ok(prepared && /^codeact-sandbox\/data:(pip|debian)-[0-9a-f]{16}$/.test(prepared.tag), JSON.stringify(prepared));
      const code = [
        'import pandas as pd',
        'import matplotlib.pyplot as plt',
        'df = pd.read_csv("data/sales.csv", parse_dates=["date"])',
        'monthly = df.groupby(df["date"].dt.to_period("M"))["amount"].sum()',
        'fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)',
        'monthly.plot(kind="bar", ax=ax, color="steelblue", title="Monthly revenue 2024")',
        'fig.tight_layout()',
        'fig.savefig("revenue.png")',
        'print(f"best month: {monthly.idxmax().strftime(\'%B %Y\')} (revenue {monthly.max():,.2f})")',
        'print(f"months: {len(monthly)}, total {monthly.sum():,.2f}")',
      ].join('\n');
      model.script((request, fallback) =>
        request.toolResults.length ? fallback(request) : { toolCall: { name: 'execute_code', input: { code, files: ['data/sales.csv'], outputs: ['revenue.png'] } } },
      );
      await newChat();
      const before = toolResults().length;
      const res = await ask('Plot monthly revenue from data/sales.csv and tell me the best month.');
      assert.ok(res && res.type !== 'confirmation', JSON.stringify(res));
      const result = toolResults()[before];
      assert.ok(result, 'the tool result reached the model');
      // Our text is the first part; Copilot appends a line naming where it keeps the image.
      const ours = result.content[0].type === 'text' ? result.content[0].value : '';
      const m = /^stdout:\nbest month: April 2024 \(revenue 2,440\.25\)\nmonths: 12, total 25,757\.00\n\nSaved for the user in the CodeAct Sandbox view: revenue\.png \((\d+(?:\.\d)? KB)\)\. The files are not sent to you; describe them or print what you need from them\.\n\nTo show the user a saved file, link to it; in the chat each opens the file in VS Code: \[revenue\\\.png\]\(<file:\/\/\/[^>]+\/revenue\.png>\)\.$/.exec(ours);
      assert.ok(m, JSON.stringify(result.content));
      const images = result.content.filter((p) => p.type === 'data' && p.mimeType === 'image/png');
      assert.equal(images.length, 1, JSON.stringify(result.content.map((p) => p.type)));
      assert.ok(images[0].bytes > 10 * 1024, `${images[0].bytes} bytes`);
      const chat = api.sandboxes().find((x) => x.sessionKey.startsWith('chat:') && x.image === prepared.tag);
      assert.ok(chat, 'the chat ran the data image');
      const runs = (await api.treeSnapshot()).flatMap((session) => session.children);
      const run = runs.find((r) => r.children.some((f) => f.label === 'revenue.png'));
      assert.ok(run, JSON.stringify(runs.map((r) => r.label)));
      assert.equal(run.description, 'ok · 1 file');
      // The tree gives the size one decimal finer than the model's sentence.
      assert.deepEqual(run.children.map((f) => f.label), ['revenue.png']);
      assert.equal(Math.round(parseFloat(run.children[0].description)), parseFloat(m[1]), run.children[0].description);
      // The first chart as a person sees it: the chat's answer, the run in the view, the chart open.
      await vscode.commands.executeCommand('vscode.open', vscode.Uri.parse(run.children[0].resourceUri));
      await vscode.commands.executeCommand('codeactSandbox.artifacts.focus');
      // For the screenshot only: the image preview and the tree draw in their own time, which no API reports.
      await h.sleep(5000);
      await h.snapshot('agent-revenue-chart');
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');

      // The chat as a notebook: the program as a cell, its stdout as a stream, the chart inline.
      const sessionNodes = await api.treeNodes();
      let chartSession;
      for (const s of sessionNodes) {
        if ((await api.treeNodes(s)).some((r) => r.record.files.some((f) => f.name === 'revenue.png'))) chartSession = s;
      }
      assert.ok(chartSession, 'the chat of the chart in the tree');
      const png = fs.readFileSync(vscode.Uri.parse(run.children[0].resourceUri).fsPath);
      const opened = await vscode.commands.executeCommand('codeactSandbox.openNotebook', chartSession);
      const editor = await h.waitFor(() => (vscode.window.activeNotebookEditor?.notebook.uri.toString() === opened ? vscode.window.activeNotebookEditor : undefined), 30000, 'the notebook editor');
      assert.equal(editor.notebook.notebookType, 'jupyter-notebook');
      assert.equal(editor.notebook.isUntitled, true);
      const cells = editor.notebook.getCells();
      assert.deepEqual(cells.map((c) => c.kind), [vscode.NotebookCellKind.Markup, vscode.NotebookCellKind.Code]);
      assert.equal(cells[1].document.getText(), `# shared from the workspace: data/sales.csv\n${code}`);
      const items = cells[1].outputs.flatMap((o) => o.items);
      assert.deepEqual(
        items.map((i) => i.mime),
        ['application/vnd.code.notebook.stdout', 'image/png', 'text/plain'],
      );
      assert.equal(Buffer.from(items[0].data).toString('utf8'), 'best month: April 2024 (revenue 2,440.25)\nmonths: 12, total 25,757.00\n');
      assert.ok(Buffer.from(items[1].data).equals(png), 'the chart inline is the stored PNG');
      // For the screenshot only: the outputs are drawn in a webview that no API reports on.
      editor.revealRange(new vscode.NotebookRange(1, 2), vscode.NotebookEditorRevealType.AtTop);
      await h.sleep(5000);
      await h.snapshot('notebook-revenue-chart');

      // Export writes the .ipynb where it is told (the save dialog's answer), and nothing else.
      const target = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-export-')), 'revenue chat.ipynb');
      const written = await vscode.commands.executeCommand('codeactSandbox.exportNotebook', chartSession, { target });
      assert.equal(written, target);
      const ipynb = JSON.parse(fs.readFileSync(target, 'utf8'));
      assert.deepEqual([ipynb.nbformat, ipynb.nbformat_minor, ipynb.cells.length], [4, 5, 2]);
      assert.equal(ipynb.cells[1].outputs[1].data['image/png'], png.toString('base64'));
      await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
    } finally {
      model.script(undefined);
      await h.setting('image', h.IMAGE);
    }
  });

  it("a new chat's first call takes the spare sandbox kept warm for it", async function () {
    await h.setting('spareSandboxes', 1);
    try {
      // The first call after the change makes a new provider, which fills its pool of spares.
      await newChat();
      await ask(program('print("warming up")'));
      const [spare] = await h.waitFor(() => (h.spareContainers().length ? h.spareContainers() : undefined), 60000, 'a spare sandbox');
      await newChat();
      const before = toolResults().length;
      await ask(program(NODENAME));
      await h.waitFor(() => toolResults().length === before + 1, 30000, 'the result on the spare');
      // Docker names a container's host after its id: the program ran in the spare.
      assert.equal(toolResults()[before].text, `stdout:\nsandbox ${spare}`);
    } finally {
      await h.setting('spareSandboxes', undefined);
    }
  });

  it("the chat's Stop cancels a long-running program and kills it", async function () {
    await newChat();
    const pending = ask(program('import time\nprint("long", flush=True)\ntime.sleep(300)'));
    // Wait until the program really runs in a sandbox, then press Stop. Counted from inside (the
    // processes besides PID 1 and the counter itself), which reads the same under every runtime.
    // Bounds far above what an idle machine needs: a new gVisor sandbox on a loaded one takes long.
    const running = await h.waitFor(() => api.sandboxes().find((s) => h.programProcesses(s.containerId) > 0), 120000, 'the program to start');
    await vscode.commands.executeCommand('workbench.action.chat.cancel');
    await Promise.race([pending, h.sleep(20000)]);
    // Unstopped, the program would sleep 300 s: gone well before that is the Stop's doing.
    await h.waitFor(() => h.programProcesses(running.containerId) === 0, 60000, 'the program to be killed');
  });

  it('with network.allow set, a chat fetches from an allowed server, its run shows the connection, and a blocked name gets the sentence', async function () {
    this.timeout(10 * 60_000); // on a fresh machine the first network sandbox builds the proxy's image
    // test/host/internet.ts: the test servers, which only this window's proxy resolves and may reach.
    const internet = JSON.parse(fs.readFileSync(process.env.CODEACT_SANDBOX_TEST_INTERNET, 'utf8'));
    const { web, other } = internet.names;
    // runsc is registered without network on this kind of machine: the allow-list needs runc.
    await h.setting('runtime', 'runc');
    await h.setting('network.allow', [web]);
    try {
      await newChat();
      const before = toolResults().length;
      const code = [
        'import ssl, urllib.error, urllib.request',
        `open("ca.pem", "w").write(${JSON.stringify(internet.caPem)})`,
        'ctx = ssl.create_default_context(cafile="ca.pem")',
        `print(urllib.request.urlopen("https://${web}/from-chat", context=ctx, timeout=30).read().decode())`,
        'try:',
        `    urllib.request.urlopen("http://${other}/", timeout=30)`,
        'except urllib.error.HTTPError as e:',
        '    print("HTTP", e.code)',
      ].join('\n');
      const res = await ask(program(code));
      assert.ok(res && res.type !== 'confirmation', JSON.stringify(res));
      assert.equal(
        toolResults()[before].text,
        [
          'stdout:',
          `${web} /from-chat https`,
          'HTTP 403',
          '',
          `This sandbox has network access to these domains only: ${web}, on ports 80 and 443, through a proxy that urllib, requests, pip and curl use by themselves (HTTP_PROXY and HTTPS_PROXY are set). Every other name is refused.`,
          '',
          `The sandbox's network proxy blocked: ${other} (not on the allow-list). If the program needs a name that is not on the allow-list, ask the user to add it to the codeactSandbox.network.allow setting. Do not try to get around the proxy: nothing else leaves the sandbox.`,
        ].join('\n'),
      );
      const runs = (await api.treeSnapshot()).flatMap((session) => session.children);
      const run = runs.find((r) => (r.description || '').includes('network:'));
      assert.ok(run, JSON.stringify(runs.map((r) => r.description)));
      assert.equal(run.description, `ok · network: 1 allowed, 1 blocked: ${other}`);
      await vscode.commands.executeCommand('codeactSandbox.artifacts.focus');
      await h.snapshot('agent-network');
    } finally {
      await h.setting('network.allow', undefined);
      await h.setting('runtime', undefined);
    }
  });

  // Last: the state holders it leaves are processes in their sandboxes, which the Stop test would count.
  it('with the state setting on, two calls of one chat share a variable; a new chat does not have it', async function () {
    await h.setting('state', 'session');
    try {
      const kept = 'State: kept for the next call.';
      await newChat();
      const before = toolResults().length;
      await ask(program('x = 41'));
      await ask(program('print(x + 1)'));
      await newChat();
      await ask(program("print('x' in globals())"));
      assert.deepEqual(
        toolResults()
          .slice(before)
          .map((r) => r.text),
        [
          `The program ran and printed nothing. Only what the program prints comes back: end it with print(...) of everything you need to see.\n\n${kept}`,
          `stdout:\n42\n\n${kept}`,
          `stdout:\nFalse\n\n${kept}`,
        ],
      );
    } finally {
      await h.setting('state', undefined);
    }
  });

  // Also last, for the same reason.
  it("the person goes back to a chat's earlier run in the view; the chat's next call starts from its state and says so", async function () {
    await h.setting('state', 'session');
    try {
      await newChat();
      const before = toolResults().length;
      await ask(program('went_back = 1'));
      await ask(program('went_back = 2'));
      let first;
      for (const session of await api.treeNodes()) {
        const runs = await api.treeNodes(session);
        if (runs.some((r) => r.record.program === 'went_back = 2')) first = runs.find((r) => r.record.program === 'went_back = 1');
      }
      assert.ok(first, "the chat's first run in the view");
      assert.deepEqual(await vscode.commands.executeCommand('codeactSandbox.goBackToRun', first), { back: 1 });
      // Asked first: the question says the chat goes back before the program runs.
      await h.setting('confirmBeforeRun', true);
      const asked = await ask(program('print(went_back)'));
      assert.deepEqual({ type: asked.type, toolId: asked.toolId }, { type: 'confirmation', toolId: 'execute_code' });
      await h.snapshot('going-back-confirmation');
      await vscode.commands.executeCommand('workbench.action.chat.acceptTool');
      await h.waitFor(() => toolResults().length === before + 3, 60000, 'the result after accepting');
      await vscode.commands.executeCommand('workbench.action.chat.resetTrustedTools');
      await h.setting('confirmBeforeRun', undefined);
      const texts = toolResults().slice(before).map((r) => r.text);
      assert.equal(texts.length, 3);
      const [, , back] = texts;
      assert.equal(
        back.replace(/in order \(\d+\.\d s\)/, 'in order (<s> s)'),
        "stdout:\n1\n\nState: went back 1 kept call before this call, as the user asked in the CodeAct Sandbox view, in a new sandbox, by re-running this chat's 1 earlier kept run in order (<s> s). " +
          'Values computed from time, randomness, the network or workspace files that changed since may differ from before.\n\nState: kept for the next call.',
      );
      await vscode.commands.executeCommand('codeactSandbox.artifacts.focus');
      await h.snapshot('went-back');
      // What `pip install` leaves in the user site becomes, after the call and off its way, the
      // chat's prepared image; deleting the chat in the view removes it.
      const pkg = [
        'import os, site',
        'd = site.getusersitepackages()',
        "os.makedirs(d + '/hostpkg-2.0.dist-info')",
        "open(d + '/hostpkg.py', 'w').close()",
        "open(d + '/hostpkg-2.0.dist-info/METADATA', 'w').write('Metadata-Version: 2.1\\nName: hostpkg\\nVersion: 2.0\\n')",
        // pip's record of what it installed: only the files it lists go into the chat's image.
        "open(d + '/hostpkg-2.0.dist-info/RECORD', 'w').write('hostpkg.py,,\\nhostpkg-2.0.dist-info/METADATA,,\\nhostpkg-2.0.dist-info/RECORD,,\\n')",
      ].join('\n');
      await ask(program(pkg));
      assert.equal(toolResults().length, before + 4);
      let chat;
      for (const session of await api.treeNodes()) {
        if ((await api.treeNodes(session)).some((r) => r.record.program === pkg)) chat = session;
      }
      assert.ok(chat, 'the chat in the view');
      const image = () => h.docker('images', '--quiet', '--filter', `label=dev.codeact-sandbox.chat.session=${chat.session.sessionDigest}`);
      await h.waitFor(() => image() !== '', 120000, "the chat's prepared image");
      assert.equal(h.docker('image', 'inspect', '--format', '{{index .Config.Labels "dev.codeact-sandbox.chat.distributions"}}', image()), '["hostpkg 2.0"]');
      await vscode.commands.executeCommand('codeactSandbox.deleteSession', chat, { confirmed: true });
      await h.waitFor(() => image() === '', 60000, "the chat's image to go with the chat");
    } finally {
      await h.setting('confirmBeforeRun', undefined);
      await h.setting('state', undefined);
    }
  });

  // Also last, for the same reason.
  it("the person starts a new chat from a run's state in the view; the model passes the message's token and the new chat starts there", async function () {
    await h.setting('state', 'session');
    try {
      await newChat();
      const before = toolResults().length;
      await ask(program('forked = 7'));
      let run;
      for (const session of await api.treeNodes()) {
        run ??= (await api.treeNodes(session)).find((r) => r.record.program === 'forked = 7');
      }
      assert.ok(run, 'the run in the view');
      const sourceKeys = api.sandboxes().map((s) => s.sessionKey);
      const { message } = await vscode.commands.executeCommand('codeactSandbox.startChatFromRun', run);
      const token = /"startFrom": "([^"]+)"/.exec(message)[1];
      await h.sleep(500);
      await h.snapshot('start-chat-from-run');
      // A model that does what the message says: the token, as given, on the first call.
      model.script((request, byDefault) => {
        const said = request.messages.filter((m) => m.role === 'user').map((m) => m.text).join('\n');
        const asked = /"startFrom": "([^"]+)"/.exec(said);
        const reply = byDefault(request);
        return asked && reply.toolCall ? { toolCall: { ...reply.toolCall, input: { ...reply.toolCall.input, startFrom: asked[1] } } } : reply;
      });
      try {
        // Another chat's state coming in is always asked, by the extension's own dialog (VS Code's
        // question before a tool can be approved away). VS Code refuses dialogs in extension
        // tests: the test answers it, as the person would, and reads its exact text.
        const questions = [];
        api.answerQuestions((question) => questions.push(question) > 0);
        try {
          const res = await ask(message + program('print(forked * 6)'));
          assert.ok(res && res.type !== 'confirmation', 'no question of VS Code before it (the extension asks its own)');
        } finally {
          api.answerQuestions(undefined);
        }
        assert.equal(questions.length, 1);
        assert.match(questions[0], /^Start this chat from the state another chat had after its run of .+\? In a new sandbox of this chat, that chat's 1 kept program run again first, with the workspace files as they are now and the allow-list of today\. The other chat is not changed\.$/);
        await h.waitFor(() => toolResults().length === before + 2, 60000, 'the result after accepting');
      } finally {
        model.script(undefined);
      }
      const texts = toolResults().slice(before).map((r) => r.text);
      assert.equal(texts.length, 2);
      assert.equal(
        texts[1].replace(/in order \(\d+\.\d s\)/, 'in order (<s> s)'),
        "stdout:\n42\n\nState: started from the state another chat had after one of its runs, as the user asked in the CodeAct Sandbox view, in a new sandbox, by re-running that chat's 1 kept run in order (<s> s). " +
          'Values computed from time, randomness, the network or workspace files that changed since may differ from that chat; files those runs wrote were written again. Later calls of this chat do not change the other chat.\n\nState: kept for the next call.',
      );
      assert.ok(token.length > 40, token);
      // The new chat has a sandbox of its own.
      assert.equal(api.sandboxes().filter((s) => !sourceKeys.includes(s.sessionKey) && s.sessionKey.startsWith('chat:')).length, 1);
      await h.snapshot('started-from-run');
    } finally {
      await h.setting('state', undefined);
    }
  });
});
