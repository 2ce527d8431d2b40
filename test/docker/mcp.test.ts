import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema, type CallToolResult, type Root } from '@modelcontextprotocol/sdk/types.js';
import { LABEL } from '../../src/docker/container/labels';
import { processIsAlive } from '../../src/docker/pool/cleanup';
import { ArtifactStore } from '../../src/storage/artifactStore';
import { IMAGE, SENTENCES, TEST_LABEL, WAITING_TEST_MS, bundleCli, containersWith, dockerCli, exists, inspect, programProcesses, spawnCli, useDocker, volumesWith, waitFor } from './helpers';

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '../../package.json'), 'utf8'));
/** A 2x2 RGB PNG, as a plotting library would write one. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR42mP4zwAE/xkgFAAb8gP9PpddpAAAAABJRU5ErkJggg==', 'base64');
const NOT_SENT = 'The files are not sent to you; describe them or print what you need from them.';

interface Running {
  client: Client;
  pid: number;
  /** What the server wrote to stderr (its log), for failure messages. */
  log(): string;
}

describe('the MCP server (integration)', function () {
  useDocker();
  let dir: string;
  let cli: string;
  let workspace: string;
  let artifacts: string;
  const running = new Set<Running>();

  before(async function () {
    this.timeout(60_000);
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-mcp-test-')));
    cli = await bundleCli(dir);
    // How npm installs the package's bin: a link to the bundle, run through its #! line.
    fs.chmodSync(cli, 0o755);
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.symlinkSync(cli, path.join(dir, 'bin', 'codeact-sandbox'));
    workspace = path.join(dir, 'workspace');
    fs.mkdirSync(path.join(workspace, 'data'), { recursive: true });
    fs.writeFileSync(path.join(workspace, 'data', 'sales.csv'), 'month,revenue\nJan,10\nFeb,32\n');
    fs.writeFileSync(path.join(workspace, '.env'), 'TOKEN=not-for-the-sandbox\n');
    fs.mkdirSync(path.join(dir, 'elsewhere'));
    fs.writeFileSync(path.join(dir, 'elsewhere', 'notes.txt'), 'from a root\n');
    artifacts = path.join(dir, 'artifacts');
  });
  afterEach(async function () {
    for (const r of running) await r.client.close();
    running.clear();
  });
  after(function () {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Starts a server (the bundle, as `codeact-sandbox mcp`) and connects the SDK's own client to it. */
  async function start(args: string[], opts: { roots?: Root[]; env?: Record<string, string> } = {}): Promise<Running> {
    const env = Object.fromEntries(Object.entries({ ...process.env, ...opts.env }).filter((e): e is [string, string] => e[1] !== undefined));
    const transport = new StdioClientTransport({
      command: path.join(dir, 'bin', 'codeact-sandbox'),
      args: ['mcp', '--image', IMAGE, '--memory', '256', '--work-area', '64', '--pids', '128', '--timeout', '60', '--verbose', ...args],
      env,
      cwd: dir,
      stderr: 'pipe',
    });
    const stderr: Buffer[] = [];
    transport.stderr?.on('data', (c: Buffer) => stderr.push(c));
    const client = new Client({ name: 'codeact-mcp-test', version: '1.0.0' }, opts.roots ? { capabilities: { roots: { listChanged: true } } } : {});
    if (opts.roots) client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: opts.roots! }));
    await client.connect(transport);
    const r = { client, pid: transport.pid!, log: () => Buffer.concat(stderr).toString('utf8') };
    running.add(r);
    return r;
  }

  function call(r: Running, args: Record<string, unknown>, signal?: AbortSignal): Promise<CallToolResult> {
    return r.client.callTool({ name: 'execute_code', arguments: args }, undefined, { timeout: 110_000, ...(signal ? { signal } : {}) }) as Promise<CallToolResult>;
  }

  const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });
  const refusal = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }], isError: true });
  /** The runs a store holds (<session>/<run>/run.json). */
  const runsIn = (root: string) =>
    fs.existsSync(root) ? (fs.readdirSync(root, { recursive: true }) as string[]).filter((p) => p.endsWith(`${path.sep}run.json`)).sort() : [];
  const sandboxesOf = (pid: number) => containersWith(`${LABEL.ownerKind}=mcp`, `${LABEL.ownerPid}=${pid}`, TEST_LABEL);

  it('lists execute_code with the schema, description and title VS Code declares', async function () {
    const r = await start(['--artifacts', artifacts]);
    const declared = manifest.contributes.languageModelTools[0];
    assert.deepEqual((await r.client.listTools()).tools, [
      { name: 'execute_code', title: declared.displayName, description: declared.modelDescription, inputSchema: declared.inputSchema },
    ]);
  });

  it("makes the connection's sandbox when the client connects, and the first call runs in it", async function () {
    const r = await start(['--artifacts', artifacts]);
    await waitFor(() => r.log().includes('created ahead of its first call'), () => `the sandbox made at connect; server log:\n${r.log()}`);
    const made = await sandboxesOf(r.pid);
    assert.equal(made.length, 1, r.log());
    assert.deepEqual(await call(r, { code: 'print(1)' }), text('stdout:\n1'));
    assert.deepEqual(await sandboxesOf(r.pid), made);
  });

  it('returns exactly the text the model reads in VS Code', async function () {
    const r = await start(['--artifacts', artifacts]);
    const result = await call(r, { code: "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)\n" });
    assert.deepEqual(result, text('stdout:\nout\n\nstderr:\nerr\n\nexit code: 3'), r.log());
  });

  it("runs a connection's calls in one sandbox, each in a fresh directory; another server gets another sandbox", async function () {
    const first = await start(['--artifacts', artifacts]);
    const a = await call(first, { code: 'import os\nprint(os.getcwd())\n' });
    const [, dirA] = /^stdout:\n\/sandbox\/runs\/(0001-[0-9a-f]{6})$/.exec((a.content[0] as { text: string }).text) ?? assert.fail(JSON.stringify(a));
    const [container] = await sandboxesOf(first.pid);
    assert.ok(container, first.log());
    const b = await call(first, { code: "import os\nprint(os.getcwd())\nprint(sorted(os.listdir('/sandbox/runs')))\n" });
    const [, dirB] = /^stdout:\n\/sandbox\/runs\/(0002-[0-9a-f]{6})\n/.exec((b.content[0] as { text: string }).text) ?? assert.fail(JSON.stringify(b));
    assert.deepEqual(b, text(`stdout:\n/sandbox/runs/${dirB}\n['${dirA}', '${dirB}']`));
    assert.deepEqual(await sandboxesOf(first.pid), [container]);

    const second = await start(['--artifacts', artifacts]);
    // A sandbox of its own: the only directory in it is this call's.
    assert.deepEqual(await call(second, { code: "import os\nprint(len(os.listdir('/sandbox/runs')))\n" }), text('stdout:\n1'));
    const [other] = await sandboxesOf(second.pid);
    assert.ok(other && other !== container, second.log());
    const labels = async (id: string) => (await inspect(id)).Config.Labels as Record<string, string>;
    assert.notEqual((await labels(other))[LABEL.session], (await labels(container))[LABEL.session]);
    assert.deepEqual(await sandboxesOf(first.pid), [container]);
  });

  it('--state session: a connection\'s calls share their state, a failed one changes nothing, reset empties it', async function () {
    const r = await start(['--artifacts', artifacts, '--state', 'session']);
    const kept = 'State: kept for the next call.';
    assert.deepEqual(await call(r, { code: 'x = 41\nprint(x)' }), text(`stdout:\n41\n\n${kept}`), r.log());
    const failed = await call(r, { code: 'x = 0\nraise SystemExit(2)' });
    assert.deepEqual(failed, text('exit code: 2\n\nState: unchanged, because this call did not succeed; the next call starts from the state the last successful call left.'));
    assert.deepEqual(await call(r, { code: 'print(x + 1)' }), text(`stdout:\n42\n\n${kept}`));
    assert.deepEqual(await call(r, { code: "print('x' in globals())", reset: true }), text(`stdout:\nFalse\n\n${kept}`));
  });

  it('answers a bad input with an isError result holding the model-facing sentence', async function () {
    const r = await start(['--artifacts', artifacts]);
    const runsBefore = runsIn(artifacts);
    const tail = 'Call execute_code with {"code": "<a complete Python program that prints its results>"}.';
    assert.deepEqual(await call(r, { code: '' }), refusal(`Invalid execute_code input: \`code\` is empty. ${tail}`));
    assert.deepEqual(await call(r, {}), refusal(`Invalid execute_code input: \`code\` must be a string holding the whole Python program. ${tail}`));
    assert.deepEqual(await call(r, { code: 'print(1)', language: 'js' }), refusal(`Invalid execute_code input: unknown parameter(s): "language". ${tail}`));
    // Refused before anything ran: no run kept.
    assert.deepEqual(runsIn(artifacts), runsBefore);
  });

  it('refuses a protected or unknown file name with the same sentences as in VS Code', async function () {
    const r = await start(['--artifacts', artifacts, '--workspace', workspace]);
    assert.deepEqual(
      await call(r, { code: 'print(1)', files: ['.env', 'data/sale.csv'] }),
      refusal(
        '".env" is refused: it is a protected file that may hold secrets (deny rule ".env"), and protected files are never shared with the sandbox. Work without it.\n' +
          '"data/sale.csv" is not in the workspace. Similar names in the workspace: "data/sales.csv".\n' +
          'No files were shared; correct the list of files and call again.',
      ),
    );
    assert.deepEqual(await call(r, { code: "print(open('data/sales.csv').read())", files: ['data/sales.csv'] }), text('stdout:\nmonth,revenue\nJan,10\nFeb,32\n'));
  });

  it("returns a PNG the program wrote as image content, saved in the user's cache by default", async function () {
    const cache = path.join(dir, 'cache');
    const r = await start([], { env: { XDG_CACHE_HOME: cache } });
    const code = `import base64\nopen('chart.png', 'wb').write(base64.b64decode('${PNG.toString('base64')}'))\nprint('plotted')\n`;
    const result = await call(r, { code, outputs: ['chart.png'] });
    const store = new ArtifactStore(path.join(cache, 'codeact-sandbox', 'runs'));
    const [session] = await store.listSessions();
    assert.ok(session, r.log());
    const [run] = await store.listRuns(session.sessionDigest);
    const filesDir = path.join(store.root, session.sessionDigest, run!.runId, 'files');
    assert.deepEqual(result, {
      content: [
        { type: 'text', text: `stdout:\nplotted\n\nSaved for the user in ${filesDir}: chart.png (73 B). ${NOT_SENT}` },
        { type: 'image', data: PNG.toString('base64'), mimeType: 'image/png' },
      ],
    });
    assert.deepEqual(fs.readFileSync(path.join(filesDir, 'chart.png')), PNG);
    assert.deepEqual(run!.files, [{ name: 'chart.png', size: 73, mediaType: 'image/png' }]);
  });

  it("takes the client's roots as the workspace, unless --workspace is given", async function () {
    const roots = [{ uri: pathToFileURL(workspace).href, name: 'workspace' }];
    const fromRoots = await start(['--artifacts', artifacts], { roots });
    assert.deepEqual(await call(fromRoots, { code: "print(open('data/sales.csv').read())", files: ['data/sales.csv'] }), text('stdout:\nmonth,revenue\nJan,10\nFeb,32\n'));

    const fixed = await start(['--artifacts', artifacts, '--workspace', workspace], { roots: [{ uri: pathToFileURL(path.join(dir, 'elsewhere')).href }] });
    assert.deepEqual(
      await call(fixed, { code: 'print(1)', files: ['notes.txt'] }),
      refusal('"notes.txt" is not in the workspace, and no file there has a similar name.\nNo files were shared; correct the list of files and call again.'),
    );

    const none = await start(['--artifacts', artifacts]);
    assert.deepEqual(
      await call(none, { code: 'print(1)', files: ['data/sales.csv'] }),
      refusal('No workspace folder is open, so no files can be shared. Call execute_code without `files`, or ask the user to open the folder that holds the data.'),
    );
  });

  it('stops the program when the client cancels the call; the next call runs at once in the same sandbox', async function () {
    this.timeout(WAITING_TEST_MS);
    const r = await start(['--artifacts', artifacts]);
    const cancel = new AbortController();
    const pending = call(r, { code: "import time\nprint('working', flush=True)\ntime.sleep(50)\n" }, cancel.signal);
    pending.catch(() => undefined);
    // Running: its directory exists and a process besides PID 1 runs (the runner's own children while
    // it preloads do not count: they come before any run's directory).
    const container = await waitFor(async () => {
      const [c] = await sandboxesOf(r.pid);
      return c !== undefined && (await runDirectories(c)) > 0 && (await programProcesses(c)) > 0 && c;
    }, () => `the program to start; server log:\n${r.log()}`);
    cancel.abort();
    await assert.rejects(pending, /AbortError/);
    await waitFor(async () => (await programProcesses(container)) === 0, () => `the cancelled program to be stopped; server log:\n${r.log()}`);
    const next = Date.now();
    assert.deepEqual(await call(r, { code: "import os\nprint(len(os.listdir('/sandbox/runs')))\n" }), text('stdout:\n2'));
    assert.ok(Date.now() - next < 20_000, 'the next call waited for the cancelled one');
    assert.deepEqual(await sandboxesOf(r.pid), [container]);
    assert.match(r.log(), /stopped=cancel/);
  });

  it('removes the sandbox when the client closes the connection', async function () {
    const r = await start(['--artifacts', artifacts]);
    assert.deepEqual(await call(r, { code: 'print(1)' }), text('stdout:\n1'));
    const [container] = await sandboxesOf(r.pid);
    assert.ok(container);
    const volumes = await volumesWith(`${LABEL.ownerPid}=${r.pid}`, TEST_LABEL);
    assert.equal(volumes.length, 1);
    running.delete(r);
    await r.client.close();
    assert.equal(processIsAlive(r.pid), false);
    assert.deepEqual(await containersWith(`${LABEL.ownerPid}=${r.pid}`, TEST_LABEL), [], r.log());
    assert.deepEqual(await volumesWith(`${LABEL.ownerPid}=${r.pid}`, TEST_LABEL), []);
    assert.match(r.log(), /shutting down: the client closed the connection/);
  });

  it("removes a killed server's sandbox when the next server starts", async function () {
    this.timeout(WAITING_TEST_MS);
    const killed = await start(['--artifacts', artifacts]);
    assert.deepEqual(await call(killed, { code: 'print(1)' }), text('stdout:\n1'));
    const [container] = await sandboxesOf(killed.pid);
    assert.ok(container);
    running.delete(killed);
    process.kill(killed.pid, 'SIGKILL');
    await waitFor(() => !processIsAlive(killed.pid), 'the killed server to be gone');
    await killed.client.close();
    assert.equal(await exists(container), true);

    const next = await start(['--artifacts', artifacts]);
    await waitFor(async () => !(await exists(container)), () => `the next server to remove the orphan; its log:\n${next.log()}`);
    assert.deepEqual(await containersWith(`${LABEL.ownerPid}=${killed.pid}`, TEST_LABEL), []);
    assert.deepEqual(await volumesWith(`${LABEL.ownerPid}=${killed.pid}`, TEST_LABEL), []);
    assert.match(next.log(), new RegExp(`left by a server that is gone \\(pid ${killed.pid}\\)`));
  });

  it('refuses options that do not apply, before touching the engine', async function () {
    const env = { ...process.env, DOCKER_HOST: 'unix:///nonexistent.sock' };
    const cases: [string[], string][] = [
      [['mcp', '--session', 'a'], 'codeact-sandbox: --session is not an option of mcp: each connection gets a sandbox of its own\n\nusage:'],
      [['mcp', '--file', 'a.csv'], 'codeact-sandbox: --file is not an option of mcp: the client names the files of each call\n\nusage:'],
      [['mcp', 'program.py'], 'codeact-sandbox: mcp takes no PROGRAM.py: the client sends the programs\n\nusage:'],
      [['mcp', '--idle-minutes', '-1'], 'codeact-sandbox: --idle-minutes must be a number from 0 to 1440\n\nusage:'],
      [['run', '--idle-minutes', '5', 'program.py'], 'codeact-sandbox: --idle-minutes is an option of mcp\n\nusage:'],
      [['mcp', '--reset'], 'codeact-sandbox: --reset is not an option of mcp: the client asks for it in a call (`reset`)\n\nusage:'],
    ];
    for (const [args, start] of cases) {
      const r = await spawnCli(cli, args, { cwd: dir, env });
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '');
      assert.ok(r.stderr.startsWith(start), `${args.join(' ')}: ${r.stderr}`);
    }
  });

  it('gives the "Docker is not reachable" sentence as an isError result when there is no engine', async function () {
    const r = await start(['--artifacts', artifacts], { env: { DOCKER_HOST: 'unix:///nonexistent.sock' } });
    assert.deepEqual(await call(r, { code: 'print(1)' }), refusal(SENTENCES.unreachable));
  });
});

/** Programs running in a sandbox (the runner itself is not one), from the engine's view. */

/** How many runs' directories the sandbox's work area holds. */
async function runDirectories(container: string): Promise<number> {
  const out = await dockerCli('exec', container, 'python3', '-c', 'import os\nprint(len(os.listdir("/sandbox/runs")))').catch(() => '0');
  return Number(out.trim());
}

