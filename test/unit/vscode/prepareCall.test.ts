import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { sessionDigest } from '../../../src/core/session';
import { readSettings, type Settings } from '../../../src/core/settings';
import { ArtifactStore } from '../../../src/storage/artifactStore';
import type { RunRecord } from '../../../src/storage/runRecord';
import { SessionStates } from '../../../src/core/state';
import { holdsState, prepareCall, type PrepareHost } from '../../../src/vscode/prepareCall';
import { outcome } from '../storeFixtures';

/** A call as VS Code prepares it: whether the person is asked first, and what they are told. */
describe('a call being prepared (unit)', () => {
  const KEY = `chat:vscode-chat-session://local/${Buffer.from('3f2a1b2c-0000-4000-8000-000000000000').toString('base64')}`;
  const CHAT = sessionDigest(KEY);
  let root: string;
  let store: ArtifactStore;
  let chosen: Map<string, string>;
  let holds: boolean;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-prepare-'));
    store = new ArtifactStore(root);
    chosen = new Map();
    holds = true;
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  const settings = (values: Partial<Record<keyof Settings, unknown>> = {}): Settings => readSettings((k) => values[k]).settings;
  const host = (s: Settings): PrepareHost => ({
    settings: s,
    image: 'img',
    building: false,
    personChose: (chat) => chosen.get(chat),
    readToken: (token) => store.readStartToken(token),
    runLabel: ({ run }) => `run ${run.slice(0, 8)}`,
    stateRuns: (chat) => store.stateRuns(chat),
    holdsState: () => holds,
  });

  /** Kept session runs of `chat`, one after the other from an empty state; their ids. */
  function keptRuns(chat: string, n: number): string[] {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const w = store.beginRun(chat, 'chat');
      w.finish(outcome({ program: `x = ${i}`, filesIn: [], workDir: `/sandbox/runs/${String(i + 1).padStart(4, '0')}-aaaaaa`, state: { reset: false, kept: true, from: i ? `${chat}${i}` : '', now: `${chat}${i + 1}` } } as Partial<RunRecord>));
      ids.push(w.runId);
    }
    return ids;
  }

  const sentence = (question: string | undefined) => question?.split('\n')[0];
  const ASKED = 'The program (1 line) runs in the sandbox `img`, chat 3f2a1b2c. It gets none of your files. It has no network.';

  it("with confirmation on, VS Code's question names another chat's state coming in even when the person chose a run to go back to", async () => {
    const [, second] = keptRuns('a', 3);
    const mine = keptRuns(CHAT, 1);
    chosen.set(CHAT, mine[0]!);
    const token = store.startToken('a', second!);
    const call = await prepareCall({ code: 'print(x)', startFrom: token }, KEY, host(settings({ state: 'session', confirmBeforeRun: true })));
    assert.equal(call.prewarm, false);
    assert.equal(
      sentence(call.question),
      `${ASKED} First this chat starts from the state another chat had after its run of run ${second!.slice(0, 8)}, which you chose in the CodeAct Sandbox view: ` +
        "in a new sandbox, that chat's 2 kept programs run again (for at most 5 minutes in all), with the workspace files as they are now and the allow-list of today. " +
        "The model's `startFrom` comes first, so the chat does not go back to the run you chose in the CodeAct Sandbox view (the model is told).",
    );
  });

  it("with confirmation on, says a startFrom will be refused: a token taken, one not made here, one passed with session state off; without it, asks nothing and makes no sandbox", async () => {
    const [first] = keptRuns('a', 1);
    const token = store.startToken('a', first!);
    assert.equal(store.takeStartToken(token, 'someone'), true);
    const ask = async (startFrom: string, state: 'fresh' | 'session') => prepareCall({ code: 'x', startFrom }, KEY, host(settings({ state, confirmBeforeRun: true })));
    // The window's host asks about another chat's state itself (windowHost.ts); nothing is made first.
    assert.deepEqual(await prepareCall({ code: 'x', startFrom: token }, KEY, host(settings({ state: 'session' }))), {
      message: '1 line of Python in the sandbox `img`, chat 3f2a1b2c',
      prewarm: false,
    });
    for (const [startFrom, state, why] of [
      [token, 'session', 'with a token a chat has used already (a token starts one chat, once)'],
      ['a.b.c.d', 'session', 'with a token that is not one you offered from the CodeAct Sandbox view'],
      [token, 'fresh', 'which needs session state, and the state setting is fresh'],
    ] as const) {
      const call = await ask(startFrom, state);
      assert.equal(call.prewarm, false, startFrom);
      assert.equal(sentence(call.question), `${ASKED} The model asks to start from another chat's state ${why}: the call is refused.`);
    }
  });

  it('runs unasked, and prewarms, with confirmation off and no startFrom; asked, and not prewarmed, with it on', async () => {
    const off = await prepareCall({ code: 'x' }, KEY, host(settings()));
    assert.deepEqual(off, { message: '1 line of Python in the sandbox `img`, chat 3f2a1b2c', prewarm: true });
    const on = await prepareCall({ code: 'x' }, KEY, host(settings({ confirmBeforeRun: true })));
    assert.deepEqual(on, { message: off.message, question: `${ASKED}\n\n\`\`\`python\nx\n\`\`\``, prewarm: false });
  });

  it('names the replay when the chat has no sandbox holding its state, with how many programs run again, and not when it has', async () => {
    keptRuns(CHAT, 3);
    const s = settings({ confirmBeforeRun: true, state: 'session' });
    holds = false;
    const gone = await prepareCall({ code: 'x' }, KEY, host(s));
    assert.equal(
      sentence(gone.question),
      `${ASKED} This chat has no sandbox holding its state now (it was removed, or the window reopened), so first the state is rebuilt: in a new sandbox, ` +
        'its 3 kept programs run again (for at most 5 minutes in all), with the workspace files as they are now and the allow-list of today.',
    );
    assert.equal(gone.message, '1 line of Python in the sandbox `img`, chat 3f2a1b2c, after rebuilding its state (3 programs run again)');
    // A reset starts from an empty state: nothing is rebuilt.
    assert.equal(sentence((await prepareCall({ code: 'x', reset: true }, KEY, host(s))).question), ASKED);
    holds = true;
    assert.equal(sentence((await prepareCall({ code: 'x' }, KEY, host(s))).question), ASKED);
  });

  it('counts the programs a going back runs again: the model\'s rewind, and the run the person chose', async () => {
    const runs = keptRuns(CHAT, 4);
    const s = settings({ confirmBeforeRun: true, state: 'session' });
    const rewind = await prepareCall({ code: 'x', rewind: 1 }, KEY, host(s));
    assert.equal(
      sentence(rewind.question),
      `${ASKED} First the chat's state goes back 1 kept call: in a new sandbox, its 3 kept programs run again (for at most 5 minutes in all), with the workspace files as they are now and the allow-list of today.`,
    );
    chosen.set(CHAT, runs[0]!);
    const person = await prepareCall({ code: 'x' }, KEY, host(s));
    assert.equal(
      sentence(person.question),
      `${ASKED} First the chat's state goes back to the run you chose in the CodeAct Sandbox view: in a new sandbox, its 1 kept program run again (for at most 5 minutes in all), with the workspace files as they are now and the allow-list of today.`,
    );
  });
});

describe("whether a chat's next call finds its state, before it runs (unit)", () => {
  it("takes the provider's word, and a sandbox with no state holds none unless the chat's rebuild was tried in it already", () => {
    const sandboxes = new Map<string, { id: string; mayHoldState: boolean }>([
      ['kept', { id: 's1', mayHoldState: true }],
      ['new', { id: 's2', mayHoldState: false }],
      ['tried', { id: 's3', mayHoldState: false }],
    ]);
    const states = new SessionStates();
    assert.equal(states.firstTryIn('tried', 's3'), true);
    const holds = holdsState({ sessionSandbox: (key) => sandboxes.get(key) }, states);
    assert.deepEqual(['kept', 'new', 'tried', 'none'].map(holds), [true, false, true, false]);
    // A provider that cannot tell: no rebuild is claimed.
    assert.equal(holdsState({}, states)('none'), true);
  });
});
