import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import Module from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { readSettings } from '../../src/core/settings';
import { ArtifactStore } from '../../src/storage/artifactStore';
import { CARD_META_KEY } from '../../src/mcp';
import { REFUSED, startQuestion } from '../../src/core/state';
import { runTime } from '../../src/storage/storeIndex';
import { log, useDocker } from './helpers';

/**
 * The run card's door (an MCP server over the window's host) against a token that reached the model:
 * another chat's state comes into a chat only when the person says yes to the project's own
 * question, whichever door the call came through (VS Code's question before a tool can be approved
 * away). Found on a read as an attacker: the door ran such a call unasked.
 */
// WindowHost imports workspaceFiles.ts, which imports `vscode` (used only when files are shared).
const resolve = (Module as unknown as { _resolveFilename: (r: string, ...a: unknown[]) => string })._resolveFilename;
const stub = path.join(os.tmpdir(), `codeact-vscode-stub-${process.pid}.js`);
fs.writeFileSync(stub, 'module.exports = { workspace: {} };');
(Module as unknown as { _resolveFilename: (r: string, ...a: unknown[]) => string })._resolveFilename = (r: string, ...a: unknown[]) => (r === 'vscode' ? stub : resolve(r, ...a));
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { WindowHost } = require('../../src/vscode/windowHost') as typeof import('../../src/vscode/windowHost');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { openCardDoor } = require('../../src/vscode/cardServer') as typeof import('../../src/vscode/cardServer');

describe("startFrom through the run card's door (integration)", function () {
  const sandboxes = useDocker();
  let root: string;
  beforeEach(() => (root = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-card-start-'))));
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it("asks the person before another chat's state comes in: no means nothing runs, yes starts the chat there", async function () {
    const store = new ArtifactStore(path.join(root, 'store'));
    const settings = { read: () => readSettings((k) => (k === 'state' ? 'session' : undefined)).settings };
    const asked: string[] = [];
    let answer = false;
    const host = new WindowHost(sandboxes.makeProvider(), settings as never, log, store, async (question) => {
      asked.push(question);
      return answer;
    });
    const door = await openCardDoor({ host, store, log, windowKey: 'window:w', html: () => '<html></html>', act: async () => ({ done: false, message: '' }) });
    const client = new Client({ name: 'test', version: '1' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(door.url), { requestInit: { headers: door.headers } }));
      const a = await client.callTool({ name: 'execute_code', arguments: { code: "secret = 'from chat A'" }, _meta: { 'vscode.conversationId': 'chat-A' } });
      const card = (a._meta as Record<string, { card: string }>)[CARD_META_KEY]!.card;
      const [chat, run] = card.split('.') as [string, string];
      // What "Start a New Chat from Here" hands a person for chat A's run.
      const token = store.startToken(chat, run);
      const call = () => client.callTool({ name: 'execute_code', arguments: { code: 'print(secret)', startFrom: token }, _meta: { 'vscode.conversationId': 'chat-B' } });
      const no = await call();
      assert.deepEqual([no.isError, no.content], [true, [{ type: 'text', text: REFUSED.startDeclined }]]);
      answer = true;
      const yes = await call();
      assert.equal((yes.content as { text: string }[])[0]!.text.split('\n\n')[0], 'stdout:\nfrom chat A');
      const label = new Date(runTime(run)).toLocaleString();
      assert.deepEqual(asked, [startQuestion(label, 1), startQuestion(label, 1)]);
      assert.equal(
        asked[0],
        `Start this chat from the state another chat had after its run of ${label}? In a new sandbox of this chat, that chat's 1 kept program run again first, ` +
          'with the workspace files as they are now and the allow-list of today. The other chat is not changed.',
      );
    } finally {
      await client.close();
      await door.close();
    }
  });
});
