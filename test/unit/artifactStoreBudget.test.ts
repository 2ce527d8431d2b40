import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { stateChain } from '../../src/core/state';
import { ArtifactStore } from '../../src/storage/artifactStore';
import { T0, dirBytes, finishedRunIn, sessionRunIn, useStore } from './storeFixtures';

/**
 * The storage budget against chats' states, on a store: which runs `prune` deletes when the store
 * is over its budget. A chat's state goes whole or not at all, and the chat that overflowed pays
 * first (src/storage/artifactStore/budget.ts says the rule; artifactStoreBudgetPlan.test.ts tests
 * it alone). This file uses only the store's own API, so it also runs against a store without the rule.
 */

describe('artifact store budget: whole chains, the overflowing chat first (unit)', () => {
  const u = useStore('artifact-budget-');
  /** The run ids of the chain a resume of `chat` would replay, or why there is none. */
  const chainOf = async (chat: string, store: ArtifactStore = u.store) => {
    const chain = stateChain(await store.stateRuns(chat));
    return chain.kind === 'ok' ? chain.runs.map((r) => r.runId) : chain.kind === 'broken' ? `broken: ${chain.why}` : 'none';
  };
  const runIds = async (chat: string) => (await u.store.listRuns(chat)).map((r) => r.runId).reverse();

  it("an attacker's chat writing large outputs cannot take another chat's state: its chain survives whole", async () => {
    // Chat A: a state of three kept runs, made first (its runs are the oldest in the store).
    const a = [await sessionRunIn(u.store, 'a', 100, '', 'a1'), await sessionRunIn(u.store, 'a', 100, 'a1', 'a2'), await sessionRunIn(u.store, 'a', 100, 'a2', 'a3')];
    // Chat B: ordinary calls that each save a large file.
    const b = [];
    for (let i = 0; i < 4; i++) b.push(await finishedRunIn(u.store, 'b', 40_000));
    const total = dirBytes(u.root);
    // B's last call pushed the store over by less than one of its runs.
    await u.store.prune(total - 1, { caller: 'b' });
    assert.deepEqual(await chainOf('a'), a.map((w) => w.runId));
    assert.deepEqual(await runIds('b'), b.slice(1).map((w) => w.runId));
  });

  it("an attacker whose large outputs are its own state loses that state whole, and another chat's state stays", async () => {
    const a = [await sessionRunIn(u.store, 'a', 100, '', 'a1'), await sessionRunIn(u.store, 'a', 100, 'a1', 'a2')];
    const b = [await finishedRunIn(u.store, 'b', 100)];
    for (const [from, now] of [['', 'b1'], ['b1', 'b2'], ['b2', 'b3']] as const) b.push(await sessionRunIn(u.store, 'b', 40_000, from, now));
    const budget = dirBytes(u.root) - 50_000;
    const result = await u.store.prune(budget, { caller: 'b' });
    assert.deepEqual(await chainOf('a'), a.map((w) => w.runId));
    assert.deepEqual(await runIds('b'), []);
    assert.deepEqual(result.chats, [{ chat: 'b', label: 'label b', runs: b.map((w) => w.runId), stateRuns: 3 }]);
    assert.equal(result.totalBytes, dirBytes(u.root));
  });

  it('never leaves a root gone while later runs of its chain stay, at any budget', async () => {
    // A: a failed call between two kept runs, and a loose run. B (the caller): two kept runs and two loose. C: loose only.
    await sessionRunIn(u.store, 'a', 3000, '', 'a1');
    await sessionRunIn(u.store, 'a', 500, 'a1', 'a1', { exitCode: 1 });
    await sessionRunIn(u.store, 'a', 3000, 'a1', 'a2');
    await finishedRunIn(u.store, 'c', 2000);
    await sessionRunIn(u.store, 'b', 5000, '', 'b1');
    await finishedRunIn(u.store, 'b', 4000);
    await sessionRunIn(u.store, 'b', 5000, 'b1', 'b2');
    await finishedRunIn(u.store, 'b', 4000);
    const before = { a: await chainOf('a'), b: await chainOf('b'), c: await chainOf('c') };
    const total = dirBytes(u.root);
    const fixture = path.join(u.tmp, 'fixture');
    fs.cpSync(u.root, fixture, { recursive: true });
    const seen = new Set<string>();
    for (let budget = total; budget >= 0; budget -= 2000) {
      fs.rmSync(u.root, { recursive: true, force: true });
      fs.cpSync(fixture, u.root, { recursive: true });
      const store = new ArtifactStore(u.root, { now: () => T0 });
      const result = await store.prune(budget, { caller: 'b' });
      assert.ok(result.totalBytes <= budget, `${budget}`);
      const after: string[] = [];
      for (const chat of ['a', 'b', 'c'] as const) {
        const chain = await chainOf(chat, store);
        // Whole, or gone with all of its runs.
        if (JSON.stringify(chain) !== JSON.stringify(before[chat])) assert.equal(chain, 'none', `${chat} at ${budget}`);
        after.push(chain === 'none' ? '-' : chat);
      }
      seen.add(after.join(''));
    }
    // B's state went before A's, and A's only when nothing else was left.
    assert.deepEqual([...seen], ['ab-', 'a--', '---']);
  });

  it("a chat started from another's state keeps copies: the other chat's state goes, the started chat's stays whole", async () => {
    const a = [await sessionRunIn(u.store, 'a', 5000, '', 'a1'), await sessionRunIn(u.store, 'a', 5000, 'a1', 'a2')];
    const c = await sessionRunIn(u.store, 'c', 100, 'a2', 'c1', { state: { reset: false, kept: true, from: 'a2', now: 'c1', origin: { chat: 'a', run: a[1]!.runId } } });
    const chainC = await chainOf('c');
    assert.deepEqual(chainC, [...a.map((w) => w.runId), c.runId]);
    await finishedRunIn(u.store, 'b', 1000);
    const result = await u.store.prune(dirBytes(u.root) - 2000, { caller: 'b' });
    assert.deepEqual(result.chats.map((x) => [x.chat, x.stateRuns]), [['b', undefined], ['a', 2]]);
    assert.equal(await chainOf('a'), 'none');
    assert.deepEqual(await chainOf('c'), chainC);
  });

  it("without copies, a started chat's state goes with the state it reads", async () => {
    const a = [await sessionRunIn(u.store, 'a', 5000, '', 'a1'), await sessionRunIn(u.store, 'a', 5000, 'a1', 'a2')];
    const c = await sessionRunIn(u.store, 'c', 100, 'a2', 'c1', { state: { reset: false, kept: true, from: 'a2', now: 'c1', origin: { chat: 'a', run: a[1]!.runId } } });
    await u.store.stateRuns('c');
    fs.rmSync(path.join(c.dir, 'origin'), { recursive: true });
    assert.deepEqual(await chainOf('c'), [a[0]!.runId, a[1]!.runId, c.runId]);
    const d = await sessionRunIn(u.store, 'd', 100, '', 'd1');
    const result = await u.store.prune(dirBytes(u.root) - 6000, { caller: 'd' });
    // D's state is not enough and no chat has loose runs: D's goes, then A's (used longest ago), and with it C's.
    assert.deepEqual(result.chats, [
      { chat: 'd', label: 'label d', runs: [d.runId], stateRuns: 1 },
      { chat: 'a', label: 'label a', runs: a.map((w) => w.runId), stateRuns: 2 },
      { chat: 'c', label: 'label c', runs: [c.runId], stateRuns: 1 },
    ]);
    for (const chat of ['a', 'c', 'd']) assert.equal(await chainOf(chat), 'none');
  });
});
