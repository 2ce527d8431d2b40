import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ErrorCode, ListRootsRequestSchema, McpError, type CallToolResult, type Root } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../src/core/logger';
import { defaultArtifactsDir, userCacheDir } from '../../src/mcp/cacheDir';
import { ClientRoots, rootFolders } from '../../src/mcp/roots';
import { createMcpServer, registerExecuteCode, rehearseProtocol, type ExecuteCodeHandler } from '../../src/mcp/server';
import { toolDefinition } from '../../src/mcp/toolResult';

function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (m: string) => lines.push(`${level}: ${m}`);
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** A server and an SDK client joined in memory; the handler is a fake of the pipeline. */
async function connected(handler: ExecuteCodeHandler, clientRoots?: () => Root[]) {
  const server = createMcpServer('1.2.3');
  const log = recordingLogger();
  const roots = new ClientRoots(server, log);
  registerExecuteCode(server, handler);
  const client = new Client({ name: 'unit', version: '1' }, clientRoots ? { capabilities: { roots: { listChanged: true } } } : {});
  if (clientRoots) client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: clientRoots() }));
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  await client.connect(b);
  return { server, client, roots, log };
}

const ok = (text: string): CallToolResult => ({ content: [{ type: 'text', text }] });

describe('MCP server (unit)', () => {
  it('lists execute_code, and only it, as the definition VS Code declares', async () => {
    const { client } = await connected(async () => ok(''));
    assert.deepEqual(client.getServerVersion(), { name: 'codeact-sandbox', title: 'CodeAct Sandbox', version: '1.2.3' });
    assert.deepEqual((await client.listTools()).tools, [toolDefinition()]);
    await client.close();
  });

  it('hands the arguments to the handler unvalidated (it validates them itself) and returns its result', async () => {
    const seen: unknown[] = [];
    const { client } = await connected(async (args) => {
      seen.push(args);
      return ok('stdout:\n42');
    });
    assert.deepEqual(await client.callTool({ name: 'execute_code', arguments: { code: 'print(42)', extra: 1 } }), ok('stdout:\n42'));
    assert.deepEqual(await client.callTool({ name: 'execute_code' }), ok('stdout:\n42'));
    assert.deepEqual(seen, [{ code: 'print(42)', extra: 1 }, {}]);
    await client.close();
  });

  it("rehearses the SDK's checks of a call on values that pass them, as a real call's do", () => {
    assert.deepEqual(rehearseProtocol(), { request: true, result: true });
  });

  it('answers an unknown tool with a protocol error', async () => {
    const { client } = await connected(async () => ok(''));
    await assert.rejects(client.callTool({ name: 'run_shell', arguments: {} }), (e: unknown) => {
      assert.ok(e instanceof McpError);
      assert.equal(e.code, ErrorCode.InvalidParams);
      assert.match(e.message, /Unknown tool: run_shell$/);
      return true;
    });
    await client.close();
  });

  it("aborts the handler's signal when the client cancels the call", async () => {
    let aborted: (reason: unknown) => void = () => {};
    const abortedInHandler = new Promise((resolve) => (aborted = resolve));
    let started: () => void = () => {};
    const startedInHandler = new Promise<void>((resolve) => (started = resolve));
    const { client } = await connected(
      (_args, signal) =>
        new Promise((resolve) => {
          started();
          signal.addEventListener('abort', () => {
            aborted(signal.reason);
            resolve(ok('stopped'));
          });
        }),
    );
    const cancel = new AbortController();
    const call = client.callTool({ name: 'execute_code', arguments: { code: 'import time; time.sleep(60)' } }, undefined, { signal: cancel.signal });
    await startedInHandler;
    cancel.abort('the user pressed Stop');
    await assert.rejects(call);
    assert.equal(await abortedInHandler, 'the user pressed Stop');
    await client.close();
  });
});

describe('MCP roots (unit)', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-roots-')));
    for (const d of ['app', 'lib', 'other/app']) fs.mkdirSync(path.join(dir, d), { recursive: true });
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'x');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  const uri = (rel: string) => pathToFileURL(path.join(dir, rel)).href;

  it('keeps local folders, named by the root name or the base name, each name once', () => {
    const log = recordingLogger();
    const folders = rootFolders(
      [
        { uri: uri('app') },
        { uri: uri('lib'), name: 'Library' },
        { uri: uri('other/app') },
        { uri: uri('lib'), name: '../up' },
        { uri: 'https://example.invalid/repo' },
        { uri: uri('missing') },
        { uri: uri('notes.txt') },
      ],
      log,
    );
    assert.deepEqual(folders, [
      { name: 'app', path: path.join(dir, 'app') },
      { name: 'Library', path: path.join(dir, 'lib') },
      { name: 'app-2', path: path.join(dir, 'other/app') },
      { name: 'lib', path: path.join(dir, 'lib') },
    ]);
    assert.deepEqual(log.lines, [
      'info: root https://example.invalid/repo is not a local file URI; it is not shared',
      `info: root ${path.join(dir, 'missing')} is not a folder here; it is not shared`,
      `info: root ${path.join(dir, 'notes.txt')} is not a folder here; it is not shared`,
    ]);
  });

  it('asks a client that offers roots once, and again after it says they changed', async () => {
    let offered: Root[] = [{ uri: uri('app') }];
    let asked = 0;
    const { client, roots } = await connected(
      async () => ok(''),
      () => {
        asked++;
        return offered;
      },
    );
    assert.deepEqual(await roots.folders(), [{ name: 'app', path: path.join(dir, 'app') }]);
    assert.deepEqual(await roots.folders(), [{ name: 'app', path: path.join(dir, 'app') }]);
    assert.equal(asked, 1);
    offered = [{ uri: uri('lib') }, { uri: uri('app') }];
    await client.sendRootsListChanged();
    // The notification travels on its own; wait until the server has seen it (bounded by the clock,
    // below mocha's timeout, not by a count of polls that a loaded machine runs through sooner).
    for (const giveUp = Date.now() + 8_000; asked === 1 && Date.now() < giveUp; ) {
      await roots.folders();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.deepEqual(await roots.folders(), [
      { name: 'lib', path: path.join(dir, 'lib') },
      { name: 'app', path: path.join(dir, 'app') },
    ]);
    assert.deepEqual(roots.known, await roots.folders());
    assert.equal(asked, 2);
    await client.close();
  });

  it('has no folders for a client that offers no roots, without asking it', async () => {
    const { client, roots } = await connected(async () => ok(''));
    assert.deepEqual(await roots.folders(), []);
    await client.close();
  });
});

describe('MCP artifacts folder (unit)', () => {
  it("defaults to a folder of the user's cache, by the platform's convention", () => {
    const home = os.homedir();
    assert.equal(defaultArtifactsDir({ XDG_CACHE_HOME: '/var/cache/me' }, 'linux'), '/var/cache/me/codeact-sandbox/runs');
    assert.equal(defaultArtifactsDir({}, 'linux'), path.join(home, '.cache', 'codeact-sandbox', 'runs'));
    // A relative XDG_CACHE_HOME is to be ignored.
    assert.equal(userCacheDir({ XDG_CACHE_HOME: 'cache' }, 'linux'), path.join(home, '.cache'));
    assert.equal(userCacheDir({}, 'darwin'), path.join(home, 'Library', 'Caches'));
    assert.equal(userCacheDir({ LOCALAPPDATA: 'C:\\Users\\me\\AppData\\Local' }, 'win32'), 'C:\\Users\\me\\AppData\\Local');
  });
});
