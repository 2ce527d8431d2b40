import * as assert from 'node:assert/strict';
import { evictionPlan, type BudgetRun } from '../../src/storage/artifactStore/budget';

/** The storage budget's rule alone (src/storage/artifactStore/budget.ts): which runs go, in which order. */

describe('artifact store budget: the rule (unit)', () => {
  const run = (chat: string, runId: string, bytes = 10, deletable = true): BudgetRun => ({ chat, runId, bytes, deletable });
  const ids = (plan: ReturnType<typeof evictionPlan>) => plan.map((e) => (e.kind === 'run' ? `${e.chat}/${e.runId}` : `state ${e.chats.join('+')}: ${e.runs.map((r) => `${r.chat}/${r.run}`).join(' ')}`));
  // Run ids sort by time: x was used longest ago, then y, then the caller b.
  const runs = [run('x', '1', 30), run('x', '2'), run('y', '3'), run('y', '4'), run('b', '5'), run('b', '6'), run('b', '7')];
  const chains = [
    { chat: 'x', own: ['2'], reads: [] },
    { chat: 'y', own: ['4'], reads: [] },
    { chat: 'b', own: ['6', '7'], reads: [] },
  ];

  it("takes the caller's loose runs, then other chats' loose runs, then the caller's state, then the others' states, least recently used first", () => {
    assert.deepEqual(ids(evictionPlan({ runs, chains, over: 1000, caller: 'b' })), ['b/5', 'x/1', 'y/3', 'state b: b/6 b/7', 'state x: x/2', 'state y: y/4']);
  });

  it("stops once the store fits, and takes the caller's state before any other chat's runs when that is enough", () => {
    assert.deepEqual(ids(evictionPlan({ runs, chains, over: 10, caller: 'b' })), ['b/5']);
    assert.deepEqual(ids(evictionPlan({ runs, chains, over: 11, caller: 'b' })), ['b/5', 'state b: b/6 b/7']);
    assert.deepEqual(ids(evictionPlan({ runs, chains, over: 30, caller: 'b' })), ['b/5', 'state b: b/6 b/7']);
    // Its state would not be enough: the other chats' loose runs go, and its state stays when they are.
    assert.deepEqual(ids(evictionPlan({ runs, chains, over: 31, caller: 'b' })), ['b/5', 'x/1']);
    assert.deepEqual(ids(evictionPlan({ runs, chains, over: 41, caller: 'y' })), ['y/3', 'x/1', 'b/5']);
    assert.deepEqual(ids(evictionPlan({ runs, chains, over: 51, caller: 'y' })), ['y/3', 'x/1', 'b/5', 'state y: y/4']);
  });

  it('without a caller, loose runs of the least recently used chats first, then their states', () => {
    assert.deepEqual(ids(evictionPlan({ runs, chains, over: 25 })), ['x/1']);
    assert.deepEqual(ids(evictionPlan({ runs, chains, over: 51 })), ['x/1', 'y/3', 'b/5', 'state x: x/2']);
  });

  it('never takes a run being written, and takes with a state every state that reads its runs', () => {
    // z started from x's state (no copies kept): its chain reads x/2. w reads a run of z's. y/10 is being written.
    const linked = [...runs, run('z', '8'), run('w', '9'), run('y', '10', 10, false)];
    const withReaders = [...chains, { chat: 'z', own: ['8'], reads: [{ chat: 'x', run: '2' }] }, { chat: 'w', own: ['9'], reads: [{ chat: 'x', run: '2' }, { chat: 'z', run: '8' }] }];
    assert.deepEqual(ids(evictionPlan({ runs: linked, chains: withReaders, over: 1000, caller: 'x' })), ['x/1', 'y/3', 'b/5', 'state x+z+w: x/2 z/8 w/9', 'state y: y/4', 'state b: b/6 b/7']);
    // A run another chat's state reads is not loose for its own chat (x reset after x/2; z reads x/1).
    const reset = { runs: [run('x', '1'), run('x', '2'), run('x', '3'), run('z', '8')], chains: [{ chat: 'x', own: ['3'], reads: [] }, { chat: 'z', own: ['8'], reads: [{ chat: 'x', run: '1' }] }] };
    assert.deepEqual(ids(evictionPlan({ ...reset, over: 15, caller: 'x' })), ['x/2', 'state x: x/3']);
    assert.deepEqual(ids(evictionPlan({ ...reset, over: 25, caller: 'x' })), ['x/2', 'state x: x/3', 'state z: z/8']);
  });
});
