import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { StateMode } from '../../../src/core/state';
import { ArtifactStore } from '../../../src/storage/artifactStore';
import type { RunRecord } from '../../../src/storage/runRecord';
import type { ArtifactNode } from '../../../src/vscode/artifactItems';
import { goBackCommands } from '../../../src/vscode/goBackCommand';
import { COMMAND } from '../../../src/vscode/ids';
import { FakeUi } from './fakes';

describe("the view's Go Back to This Run's State and Start a New Chat from Here (unit)", () => {
  let root: string;
  let store: ArtifactStore;
  let ui: FakeUi;
  let chosen: string[];
  let mode: StateMode;
  let goBack: (node: ArtifactNode) => unknown;
  let startChat: (node: ArtifactNode) => unknown;

  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-goback-'));
    store = new ArtifactStore(root);
    ui = new FakeUi();
    chosen = [];
    mode = 'session';
    const commands = goBackCommands(store, { goBackTo: (digest, runId) => void chosen.push(`${digest}/${runId}`) }, ui, () => mode);
    goBack = commands[COMMAND.goBackToRun];
    startChat = commands[COMMAND.startChatFromRun];
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  /** A session run of chat "c" in the store, as the pipeline records it. */
  function record(program: string, state: NonNullable<RunRecord['state']>): ArtifactNode & { kind: 'run' } {
    const w = store.beginRun('c', 'chat');
    const r = w.finish({ startedAt: new Date(0).toISOString(), durationMs: 1, image: 'i', exitCode: 0, timedOut: false, cancelled: false, program, resultText: '', filesIn: [], stdoutTruncated: false, stderrTruncated: false, state });
    return { kind: 'run', sessionDigest: 'c', record: r };
  }

  it('takes a run the state grew from, and says how many kept calls after it are undone', async () => {
    const first = record('x = 1', { reset: false, kept: true, from: '', now: 'a' });
    record('x = 2', { reset: false, kept: true, from: 'a', now: 'b' });
    assert.deepEqual(await goBack(first), { back: 1 });
    assert.deepEqual(chosen, [`c/${first.record.runId}`]);
    assert.deepEqual(ui.shown, ["info: The chat's next call starts from the state after this run, without the 1 kept call after it: rebuilt in a new sandbox."]);
  });

  it('refuses a run the state no longer grew from, and any run while the state setting is fresh', async () => {
    const first = record('x = 1', { reset: false, kept: true, from: '', now: 'a' });
    record('y = 1', { reset: true, kept: true, from: '', now: 'b' });
    await goBack(first);
    mode = 'fresh';
    await goBack(first);
    assert.deepEqual(chosen, []);
    assert.deepEqual(ui.shown, [
      "warning: CodeAct Sandbox: this run's state cannot be gone back to: that run's state is no longer the one this chat's state grew from (it was not kept, or a reset or going back came after it). [Show Log -> codeactSandbox.showLog]",
      'warning: CodeAct Sandbox: Going back needs session state, and the state setting is fresh. [Open Setting -> workbench.action.openSettings codeactSandbox.state]',
    ]);
  });

  describe('Start a New Chat from Here', () => {
    it("opens a new chat whose message hands the model a token this store reads back as the run", async () => {
      record('x = 1', { reset: false, kept: true, from: '', now: 'a' });
      const second = record('x = 2', { reset: false, kept: true, from: 'a', now: 'b' });
      const result = (await startChat(second)) as { message: string };
      const token = /"startFrom": "([^"]+)"/.exec(result.message)![1]!;
      assert.deepEqual(store.readStartToken(token), { origin: { chat: 'c', run: second.record.runId } });
      assert.equal(
        result.message,
        `Continue from the CodeAct Sandbox state an earlier chat had after its run of ${new Date(0).toLocaleString()}: on your first execute_code call, pass "startFrom": "${token}" (good for one chat, within 15 minutes). `,
      );
      assert.deepEqual(ui.shown, [`new chat: ${result.message}`]);
      // The run's own chat is not touched.
      assert.deepEqual(chosen, []);
    });

    it('refuses a run that kept no state, one whose earlier runs cannot be re-run, and any run while the state setting is fresh', async () => {
      const failed = record('raise SystemExit(1)', { reset: false, kept: false, from: '', now: '' });
      const orphan = record('y = 1', { reset: false, kept: true, from: 'gone', now: 'b' });
      assert.deepEqual(await startChat(failed), { why: 'it did not keep a session state' });
      await startChat(orphan);
      mode = 'fresh';
      await startChat(orphan);
      assert.deepEqual(ui.shown, [
        'warning: CodeAct Sandbox: a new chat cannot start from this run\'s state: it did not keep a session state. [Show Log -> codeactSandbox.showLog]',
        'warning: CodeAct Sandbox: a new chat cannot start from this run\'s state: its earlier kept runs cannot be re-run: the record of one of them is missing (deleted, or removed to keep within the storage budget). [Show Log -> codeactSandbox.showLog]',
        "warning: CodeAct Sandbox: Starting a chat from a run's state needs session state, and the state setting is fresh. [Open Setting -> workbench.action.openSettings codeactSandbox.state]",
      ]);
    });
  });
});
