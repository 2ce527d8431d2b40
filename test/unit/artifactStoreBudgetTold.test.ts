import * as assert from 'node:assert/strict';
import { silentLogger } from '../../src/core/logger';
import { SessionStates, STATE_LINES, stateChain } from '../../src/core/state';
import type { Sandbox } from '../../src/core/sandbox';
import { sessionDigest } from '../../src/core/session';
import { executeToolCall } from '../../src/core/toolCall';
import { pruneAfterCall } from '../../src/storage/artifactStore';
import { RunRecording } from '../../src/storage/runRecorder';
import { dirBytes, finishedRunIn, sessionRunIn, useStore } from './storeFixtures';

/**
 * What the storage budget's prune after a call tells: the calling chat's model, in that call's
 * result, when its state or this call's files went; the log, whose; and the next call of a chat
 * whose state went, which starts from an empty state and says why.
 */

describe('artifact store budget: what the calling chat is told, and its next call (unit)', () => {
  const u = useStore('artifact-budget-told-');
  const attacker = 'chat:attacker';
  const victim = 'chat:victim';
  const MB = 1024 * 1024;

  /** A sandbox whose state follows each kept run, and that notes each call's reset. */
  function fakeSandbox() {
    const resets: boolean[] = [];
    let state = '';
    let n = 0;
    const sandbox: Sandbox = {
      id: 'fake',
      image: 'fake:1',
      holdsNoState: async () => state === '',
      async run(r) {
        r.onStart();
        resets.push(r.state?.reset ?? false);
        if (r.state?.reset) state = '';
        const from = state;
        state = `s${++n}`;
        return { exitCode: 0, workDir: `/sandbox/runs/${n}`, state: { from, now: state, kept: true } };
      },
      async collect() {
        return { saved: [], missing: [], refused: [] };
      },
    };
    return { sandbox, resets };
  }

  async function call(sandbox: Sandbox, states: SessionStates, sessionKey: string, code: string) {
    const recording = new RunRecording(u.store, sessionKey);
    const { report } = await executeToolCall({ acquire: async () => sandbox }, silentLogger, { code }, {
      sessionKey,
      limits: { timeoutMs: 5000, outputBudgetBytes: 7800, maxOutputBytes: MB },
      memoryMb: 256,
      filesIn: { source: undefined, caps: { denyGlobs: [], maxFiles: 0, maxFileBytes: 0, maxTotalBytes: 0 } },
      filesOut: { mode: 'declared', caps: { maxFiles: 5, maxFileBytes: MB, maxTotalBytes: MB }, savedWhere: 'in the test' },
      record: recording.record,
      states,
      stateRuns: recording.stateRuns,
    });
    return { report, runId: recording.begun!.runId };
  }

  it("says in the call's result that its chat's state went, makes its next call start from an empty state, and says so there too", async () => {
    const states = new SessionStates();
    const { sandbox, resets } = fakeSandbox();
    await call(sandbox, states, victim, 'v = 1');
    // The attacker's state: three kept runs of 300 KB each.
    const a = sessionDigest(attacker);
    await sessionRunIn(u.store, a, 300 * 1024, '', 'x1');
    await sessionRunIn(u.store, a, 300 * 1024, 'x1', 'x2');
    const last = await sessionRunIn(u.store, a, 300 * 1024, 'x2', 'x3');
    states.settle(attacker, { reset: false, succeeded: true, outcome: { from: 'x2', now: 'x3', kept: true } });

    const pruned = await pruneAfterCall(u.store, { budgetBytes: 0.5 * MB, sessionKey: attacker, run: { runId: last.runId, savedFiles: 1 }, states });
    assert.equal(
      pruned.model,
      "State: deleted after this call, with 3 stored runs of this chat, this call's included, and their files, to keep the stored runs within the storage budget; the next call starts from an empty state.",
    );
    assert.equal(pruned.log, `Deleted 3 stored runs to stay within the storage budget of 0.5 MB: the state of label ${a} with its 3 kept runs, so its next call starts from an empty state.`);
    assert.equal(pruned.runDeleted, true);
    assert.equal(states.stateDropped(attacker), true);
    assert.equal(states.stateDropped(victim), false);
    assert.equal(stateChain(await u.store.stateRuns(sessionDigest(victim))).kind, 'ok');

    resets.length = 0;
    const next = await call(sandbox, states, attacker, 'y = 2');
    assert.deepEqual(resets, [true]);
    assert.equal(next.report.text.split('\n\n').at(-1), `${STATE_LINES.dropped} ${STATE_LINES.kept}`);
    assert.equal(
      STATE_LINES.dropped,
      "This chat's earlier state was deleted to keep the stored runs within the storage budget, so this call started from an empty state.",
    );
    // A new chain starts there; the call after it carries on as ever.
    assert.deepEqual(u.store.readRun(a, next.runId)?.state, { reset: true, kept: true, from: '', now: 's2' });
    const after = await call(sandbox, states, attacker, 'z = 3');
    assert.deepEqual(resets, [true, false]);
    assert.equal(after.report.text.split('\n\n').at(-1), STATE_LINES.kept);
  });

  it("a chat of this host that lost its state to another's call starts its next call from an empty state; the caller is told only of its own", async () => {
    const states = new SessionStates();
    const { sandbox, resets } = fakeSandbox();
    await call(sandbox, states, victim, 'v = 1');
    const b = await finishedRunIn(u.store, sessionDigest(attacker), 1000);
    const pruned = await pruneAfterCall(u.store, { budgetBytes: 0, sessionKey: attacker, run: { runId: b.runId, savedFiles: 1 }, states });
    assert.equal(pruned.model, 'The file this call saved was deleted right after it, to keep the stored runs within the storage budget.');
    assert.equal(
      pruned.log,
      `Deleted 2 stored runs to stay within the storage budget of 0 MB: 1 run of label ${sessionDigest(attacker)}; the state of session ${sessionDigest(victim).slice(0, 8)} with its 1 kept run, so its next call starts from an empty state.`,
    );
    assert.equal(states.stateDropped(victim), true);
    resets.length = 0;
    const next = await call(sandbox, states, victim, 'w = 2');
    assert.deepEqual(resets, [true]);
    assert.equal(next.report.text.split('\n\n').at(-1), `${STATE_LINES.dropped} ${STATE_LINES.kept}`);
  });

  it('tells the model nothing when only older runs of its chat, or other chats, went', async () => {
    const a = sessionDigest(attacker);
    const old = await finishedRunIn(u.store, a, 1000);
    u.now += 1000;
    const mine = await finishedRunIn(u.store, a, 10);
    const pruned = await pruneAfterCall(u.store, { budgetBytes: dirBytes(mine.dir), sessionKey: attacker, run: { runId: mine.runId, savedFiles: 1 } });
    assert.deepEqual(pruned.result.chats, [{ chat: a, label: `label ${a}`, runs: [old.runId] }]);
    assert.equal(pruned.model, undefined);
    assert.equal(pruned.runDeleted, false);
    const within = await pruneAfterCall(u.store, { budgetBytes: MB, sessionKey: attacker });
    assert.deepEqual([within.log, within.model], [undefined, undefined]);
  });
});
