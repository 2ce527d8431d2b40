import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { capturedFromString } from '../../src/core/capture';
import type { ExecuteReport } from '../../src/core/executeCode';
import { silentLogger } from '../../src/core/logger';
import { sessionDigest } from '../../src/core/session';
import { CARD_META_KEY, CARD_TOOL, CARD_URI, LiveCalls, cardExecuteHandler, createMcpServer, openLoopback, registerExecuteCode, type CardCalls, type CardDoor } from '../../src/mcp';
import { CARD_MIME_TYPE } from '../../src/mcp/card/names';
import type { CardData } from '../../src/mcp/card/contract';

const HTML = '<!doctype html><html><head><title>card</title></head><body></body></html>';
const CARD = 'aaaaaaaaaaaaaaaa.20261207T010203004Z-abcdef.0123456789abcdef0123';
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

function report(over: Partial<ExecuteReport> = {}): ExecuteReport {
  return {
    text: 'stdout:\nhello',
    exitCode: 0,
    timedOut: false,
    cancelled: false,
    outputLimited: false,
    durationMs: 1234,
    sandboxId: 'sandbox',
    image: 'codeact-sandbox/python:bookworm',
    stdout: capturedFromString('hello\n'),
    stderr: capturedFromString(''),
    shown: { stdout: 'hello\n', stderr: '' },
    oomKilled: false,
    files: [
      { name: 'chart.png', size: PNG.length, mediaType: 'image/png' },
      { name: 'data/rows.csv', size: 24 },
    ],
    notes: ['Saved for the user in the CodeAct Sandbox view: chart.png (16 B), data/rows.csv (24 B).'],
    startedAt: new Date('2026-12-07T01:02:03.004Z'),
    ...over,
  };
}

/** A host whose call ends when the test says so, printing what the test gives it meanwhile. */
function pendingHost(): { host: CardCalls; print(text: string): void; finish(r?: Partial<ExecuteReport>): void; signal(): AbortSignal | undefined; keys: string[] } {
  let out: ((s: 'stdout' | 'stderr', c: Buffer) => void) | undefined;
  let done: ((r: ExecuteReport) => void) | undefined;
  let signal: AbortSignal | undefined;
  const keys: string[] = [];
  return {
    keys,
    host: {
      run: async (c) => {
        out = c.onOutput;
        signal = c.signal;
        keys.push(c.sessionKey);
        const r = await new Promise<ExecuteReport>((resolve) => (done = resolve));
        return { report: r, text: r.text, images: [{ name: 'chart.png', mimeType: 'image/png', bytes: PNG }], run: { chat: 'aaaaaaaaaaaaaaaa', runId: '20261207T010203004Z-abcdef' } };
      },
      cardToken: () => CARD,
      fallbackKey: 'window:w',
      log: silentLogger,
      client: 'vscode',
    },
    print: (text) => out!('stdout', Buffer.from(text)),
    finish: (r) => done!(report(r)),
    signal: () => signal,
  };
}

async function connected(door: CardDoor, host: CardCalls): Promise<Client> {
  const server = createMcpServer('1.0.0', { card: true });
  registerExecuteCode(server, cardExecuteHandler(host, door.live), { door, html: () => HTML });
  const client = new Client({ name: 'unit', version: '1' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(a), client.connect(b)]);
  return client;
}

describe('the run card over MCP (unit)', () => {
  let dir: string;
  let door: CardDoor;
  let acted: string[];
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-card-'));
    fs.writeFileSync(path.join(dir, 'chart.png'), PNG);
    fs.writeFileSync(path.join(dir, 'rows.csv'), 'name,n\nb,2\na,10\nc,1\n');
    acted = [];
    door = {
      live: new LiveCalls(),
      run: (card) =>
        card === CARD
          ? {
              chat: 'aaaaaaaaaaaaaaaa',
              run: '20261207T010203004Z-abcdef',
              files: [
                { name: 'chart.png', size: PNG.length, mediaType: 'image/png' },
                { name: 'data/rows.csv', size: 24 },
              ],
              filePath: (name) => path.join(dir, path.basename(name)),
            }
          : undefined,
      act: async (_run, name, action) => {
        acted.push(`${action} ${name ?? '-'}`);
        return { done: true, message: 'ok' };
      },
    };
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('links execute_code to the card, lists the card as an MCP App, and its tools for the card alone', async () => {
    const client = await connected(door, pendingHost().host);
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => [t.name, t._meta]),
      [
        ['execute_code', { ui: { resourceUri: CARD_URI } }],
        ...Object.values(CARD_TOOL).map((name) => [name, { ui: { visibility: ['app'] } }]),
      ],
    );
    const { resources } = await client.listResources();
    assert.deepEqual(resources.map((r) => [r.uri, r.mimeType]), [[CARD_URI, CARD_MIME_TYPE]]);
    const read = await client.readResource({ uri: CARD_URI });
    assert.deepEqual(read.contents, [{ uri: CARD_URI, mimeType: CARD_MIME_TYPE, text: HTML, _meta: { ui: { csp: { connectDomains: [], resourceDomains: [] }, prefersBorder: false } } }]);
    // The MCP Apps library's own name for the type (an ES module: imported as such).
    const extApps = '@modelcontextprotocol/ext-apps/server';
    const { RESOURCE_MIME_TYPE } = (await import(extApps)) as { RESOURCE_MIME_TYPE: string };
    assert.equal(CARD_MIME_TYPE, RESOURCE_MIME_TYPE);
  });

  it("refuses the card's tools when the call comes the model's way, or without the card's token", async () => {
    const client = await connected(door, pendingHost().host);
    const asModel = await client.callTool({ name: CARD_TOOL.file, arguments: { card: CARD, name: 'chart.png' }, _meta: { 'vscode.conversationId': 'chat-1' } });
    assert.deepEqual([asModel.isError, asModel.content], [true, [{ type: 'text', text: "card_file is the run card's own tool, not one the model may call." }]]);
    const madeUp = await client.callTool({ name: CARD_TOOL.file, arguments: { card: CARD.replace('0123', '9999'), name: 'chart.png' } });
    assert.equal(madeUp.isError, true);
    const other = await client.callTool({ name: CARD_TOOL.file, arguments: { card: CARD, name: '../../etc/passwd' } });
    assert.deepEqual(other.content, [{ type: 'text', text: '../../etc/passwd is not a saved file of this run.' }]);
    const image = await client.callTool({ name: CARD_TOOL.file, arguments: { card: CARD, name: 'chart.png' } });
    assert.deepEqual(image.structuredContent, { mediaType: 'image/png', size: PNG.length, base64: PNG.toString('base64') });
    const sorted = await client.callTool({ name: CARD_TOOL.table, arguments: { card: CARD, name: 'data/rows.csv', offset: 0, limit: 2, sort: { column: 1, descending: true } } });
    assert.deepEqual(sorted.structuredContent, { columns: ['name', 'n'], rows: [['a', '10'], ['b', '2']], total: 3, offset: 0, truncated: false });
    await client.callTool({ name: CARD_TOOL.action, arguments: { card: CARD, action: 'notebook' } });
    await client.callTool({ name: CARD_TOOL.action, arguments: { card: CARD, name: 'chart.png', action: 'save' } });
    assert.deepEqual(acted, ['notebook -', 'save chart.png']);
  });

  it("runs execute_code in the chat VS Code names, shows the card live while it runs, and hands it the card's data at the end", async () => {
    const pending = pendingHost();
    const client = await connected(door, pending.host);
    const args = { code: 'print("hello")', outputs: ['chart.png'] };
    const call = client.callTool({ name: 'execute_code', arguments: args, _meta: { 'vscode.conversationId': 'chat-1234' } });
    await new Promise((r) => setImmediate(r));
    // The card knows the call's input only: its keys in another order are the same input.
    const live = await client.callTool({ name: CARD_TOOL.live, arguments: { input: { outputs: ['chart.png'], code: 'print("hello")' } } });
    const claim = (live.structuredContent as { claim: string }).claim;
    assert.match(claim, /^[A-Za-z0-9_-]{24}$/);
    assert.deepEqual((await client.callTool({ name: CARD_TOOL.live, arguments: { input: args } })).structuredContent, {}, 'claimed once');
    pending.print('hel');
    const first = (await client.callTool({ name: CARD_TOOL.poll, arguments: { claim, stdoutFrom: 0, stderrFrom: 0 } })).structuredContent as Record<string, unknown>;
    assert.deepEqual([first.running, first.stdout, first.stdoutFrom], [true, 'hel', 3]);
    pending.print('lo\n');
    const second = (await client.callTool({ name: CARD_TOOL.poll, arguments: { claim, stdoutFrom: 3, stderrFrom: 0 } })).structuredContent as Record<string, unknown>;
    assert.deepEqual([second.stdout, second.stdoutFrom], ['lo\n', 6]);
    assert.deepEqual((await client.callTool({ name: CARD_TOOL.stop, arguments: { claim } })).structuredContent, { stopping: true });
    assert.equal(pending.signal()?.aborted, true);
    pending.finish();
    const result = await call;
    assert.deepEqual(pending.keys, [`chat:vscode-chat-session://local/${Buffer.from('chat-1234').toString('base64url')}`]);
    assert.deepEqual(result.content, [
      { type: 'text', text: 'stdout:\nhello' },
      { type: 'image', data: PNG.toString('base64'), mimeType: 'image/png', annotations: { audience: ['assistant'] } },
    ]);
    const card = (result._meta as Record<string, CardData>)[CARD_META_KEY]!;
    assert.deepEqual(
      { ...card },
      {
        v: 1,
        card: CARD,
        status: 'ok',
        exitCode: 0,
        durationMs: 1234,
        startedAt: '2026-12-07T01:02:03.004Z',
        image: 'codeact-sandbox/python:bookworm',
        chat: `session ${sessionDigest(pending.keys[0]!).slice(0, 8)}`,
        stdout: 'hello\n',
        stderr: '',
        stdoutOmitted: 0,
        stderrOmitted: 0,
        files: [
          { name: 'chart.png', size: PNG.length, mediaType: 'image/png', kind: 'image' },
          { name: 'data/rows.csv', size: 24, kind: 'table' },
        ],
        notSaved: [],
        notes: ['Saved for the user in the CodeAct Sandbox view: chart.png (16 B), data/rows.csv (24 B).'],
      },
    );
    assert.deepEqual((await client.callTool({ name: CARD_TOOL.poll, arguments: { claim, stdoutFrom: 6, stderrFrom: 0 } })).structuredContent, {
      running: false,
      elapsedMs: 0,
      stdout: '',
      stderr: '',
      stdoutFrom: 6,
      stderrFrom: 0,
    });
  });

  it('opens a loopback door that asks for its secret and its own Host, and serves a client that has them', async () => {
    const door2 = await openLoopback(() => {
      const server = createMcpServer('1.0.0', { card: true });
      registerExecuteCode(server, cardExecuteHandler(pendingHost().host, door.live), { door, html: () => HTML });
      return server;
    }, silentLogger);
    try {
      const url = new URL(door2.url);
      assert.equal(url.hostname, '127.0.0.1');
      const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
      const post = (headers: Record<string, string>) =>
        fetch(door2.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(init) });
      assert.equal((await post({})).status, 401);
      assert.equal((await post({ authorization: 'Bearer nope' })).status, 401);
      // Another name for this address (a page's DNS rebinding), with the right secret all the same.
      const rebound = await new Promise<number>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: Number(url.port), path: '/mcp', method: 'POST', headers: { host: `evil.example:${url.port}`, ...door2.headers, 'content-type': 'application/json' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end(JSON.stringify(init));
      });
      assert.equal(rebound, 421);
      const client = new Client({ name: 'unit', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: door2.headers } }));
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['execute_code', ...Object.values(CARD_TOOL)]);
      await client.close();
    } finally {
      await door2.close();
    }
  });
});
