import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ArtifactStore, type StoreFs } from '../../src/storage/artifactStore';
import { HOUR, T0, countingFs, dirBytes, finishedRunIn, outcome, useStore, writeRuns } from './storeFixtures';

describe('artifact store sizes and pruning (unit)', () => {
  const u = useStore('artifact-size-');
  const finishedRun = (session: string, size: number, label?: string) => finishedRunIn(u.store, session, size, label);

  describe('size and pruning', () => {
    it('totals every byte under the root', async () => {
      const w = await finishedRun('s', 1000);
      fs.writeFileSync(path.join(w.dir, 'stderr.txt'), 'x'.repeat(24));
      const recordBytes = fs.statSync(path.join(w.dir, 'run.json')).size;
      assert.equal(await u.store.totalBytes(), 1000 + 24 + recordBytes);
    });

    it("with no calling chat, deletes the least recently used chat's runs first, each chat's oldest first, until the store fits", async () => {
      const runs = [];
      for (const session of ['b', 'a', 'c', 'a', 'b']) {
        runs.push(await finishedRun(session, 1000));
        u.now += 60_000;
      }
      const sizes = runs.map((w) => dirBytes(w.dir));
      const total = sizes.reduce((x, y) => x + y, 0);
      assert.equal(await u.store.totalBytes(), total);

      // Room for b's two runs and a little more: c (used longest ago) goes, then a, oldest first.
      const budget = sizes[0]! + sizes[4]! + 10;
      assert.deepEqual(await u.store.prune(budget), {
        deletedRuns: 3,
        freedBytes: sizes[2]! + sizes[1]! + sizes[3]!,
        totalBytes: sizes[0]! + sizes[4]!,
        chats: [
          { chat: 'c', label: 'label c', runs: [runs[2]!.runId] },
          { chat: 'a', label: 'label a', runs: [runs[1]!.runId, runs[3]!.runId] },
        ],
      });
      assert.deepEqual((await u.store.listRuns('a')).map((r) => r.runId), []);
      assert.deepEqual((await u.store.listRuns('b')).map((r) => r.runId), [runs[4]!.runId, runs[0]!.runId]);
      assert.deepEqual(fs.readdirSync(u.root).sort(), ['b']);

      assert.deepEqual(await u.store.prune(budget), { deletedRuns: 0, freedBytes: 0, totalBytes: sizes[0]! + sizes[4]!, chats: [] });
      assert.deepEqual(await u.store.prune(0), {
        deletedRuns: 2,
        freedBytes: sizes[0]! + sizes[4]!,
        totalBytes: 0,
        chats: [{ chat: 'b', label: 'label b', runs: [runs[0]!.runId, runs[4]!.runId] }],
      });
    });

    it('never deletes the run being written, even when it is the oldest', async () => {
      const writing = u.store.beginRun('s', 'l');
      await writing.addFile('big.bin', Buffer.alloc(5000), 5000);
      u.now += 1000;
      const done = await finishedRun('s', 10);
      const result = await u.store.prune(0);
      assert.equal(result.deletedRuns, 1);
      assert.equal(result.totalBytes, 5000);
      assert.ok(fs.existsSync(path.join(writing.filesDir, 'big.bin')));
      assert.equal(fs.existsSync(done.dir), false);
    });

    it("leaves another window's fresh unfinished run alone, and removes one left by a crash", async () => {
      const otherWindow = new ArtifactStore(u.root, { now: () => u.now });
      const theirs = otherWindow.beginRun('s', 'l');
      await theirs.addFile('x', Buffer.alloc(100), 100);
      u.now += HOUR;
      assert.deepEqual(await u.store.prune(0), { deletedRuns: 0, freedBytes: 0, totalBytes: 100, chats: [] });
      u.now += 24 * HOUR;
      assert.deepEqual(await u.store.prune(0), { deletedRuns: 1, freedBytes: 100, totalBytes: 0, chats: [{ chat: 's', label: '', runs: [theirs.runId] }] });
    });
  });

  describe('change notification', () => {
    it('notifies on finish, delete, clear and prune, not on begin or discard, until disposed', async () => {
      let calls = 0;
      const sub = u.store.onDidChange(() => calls++);
      const throwing = u.store.onDidChange(() => {
        throw new Error('a broken view');
      });
      const w = u.store.beginRun('s', 'l');
      assert.equal(calls, 0);
      w.finish(outcome());
      assert.equal(calls, 1);
      u.store.beginRun('s', 'l').discard();
      assert.equal(calls, 1);
      await u.store.deleteRun('s', w.runId);
      assert.equal(calls, 2);
      await finishedRun('s', 1);
      await u.store.deleteSession('s');
      assert.equal(calls, 4);
      await finishedRun('s', 1);
      await u.store.clear();
      assert.equal(calls, 6);
      await finishedRun('s', 1);
      await u.store.prune(0);
      assert.equal(calls, 8);
      await u.store.prune(0);
      await u.store.clear();
      assert.equal(calls, 8);
      sub.dispose();
      throwing.dispose();
      await finishedRun('s', 1);
      assert.equal(calls, 8);
    });
  });

  describe('the size index', () => {
    /** One execute_code call as the tool makes it: begin, one file, finish, then prune. */
    async function oneCall(s: ArtifactStore, budget: number) {
      const w = s.beginRun('live', 'label live');
      await w.addFile('out.bin', Buffer.alloc(100, 1), 100);
      w.finish(outcome());
      return s.prune(budget);
    }

    it('prunes after a call without reading the other runs again: 2,000 runs cost what 20 do', async function () {
      this.timeout(60_000);
      // 2,000 runs are 8,000 files: in memory where there is a RAM disk, since a busy disk takes
      // longer to write and remove them than the test takes.
      const scratch = fs.mkdtempSync(path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'artifact-2000-'));
      try {
        const costs: Record<string, number>[] = [];
        for (const count of [20, 2000]) {
          const dir = path.join(scratch, `store-${count}`);
          const ids = writeRuns(dir, 'old', count, T0 - HOUR, 1000);
          const counting = countingFs();
          const s = new ArtifactStore(dir, { now: () => u.now, fs: counting.fs });
          const total = dirBytes(dir);
          // The first use walks the whole store, once.
          assert.deepEqual(await s.prune(total), { deletedRuns: 0, freedBytes: 0, totalBytes: total, chats: [] });
          assert.equal(counting.calls.readFile, count);
          assert.equal(counting.calls.readdir, 1 + 1 + 2 * count);

          counting.reset();
          const within = await oneCall(s, 10 * total);
          assert.deepEqual(within, { deletedRuns: 0, freedBytes: 0, totalBytes: dirBytes(dir), chats: [] });
          costs.push({ ...counting.calls });

          // Over budget by a little: only the oldest run goes, and only it is read.
          counting.reset();
          const oldest = dirBytes(path.join(dir, 'old', ids[0]!));
          const over = await oneCall(s, dirBytes(dir) + 100);
          assert.deepEqual(over, { deletedRuns: 1, freedBytes: oldest, totalBytes: dirBytes(dir), chats: [{ chat: 'old', label: 'label old', runs: [ids[0]!] }] });
          assert.equal(fs.existsSync(path.join(dir, 'old', ids[0]!)), false);
          costs.push({ ...counting.calls });
        }
        // Measuring the new run: its folder, its files folder and two lstats; its record is not read back.
        assert.deepEqual(costs[0], { readdir: 2, lstat: 2 });
        // The same, plus checking the oldest run is still there and deleting it (and trying its session folder).
        assert.deepEqual(costs[1], { readdir: 2, lstat: 3, rm: 1, rmdir: 1 });
        assert.deepEqual(costs[2], costs[0]);
        assert.deepEqual(costs[3], costs[1]);
      } finally {
        fs.rmSync(scratch, { recursive: true, force: true });
      }
    });

    it('lists from the index after the first walk: a call adds its own record and reads no other', async () => {
      writeRuns(u.root, 'old', 3, T0 - HOUR, 10);
      const counting = countingFs();
      const s = new ArtifactStore(u.root, { now: () => u.now, fs: counting.fs });
      assert.equal((await s.listSessions()).length, 1);
      counting.reset();
      const w = s.beginRun('live', 'label live');
      const record = w.finish(outcome());
      assert.deepEqual(
        (await s.listSessions()).map((x) => [x.sessionDigest, x.runCount]),
        [
          ['live', 1],
          ['old', 3],
        ],
      );
      assert.deepEqual(await s.listRuns('live'), [record]);
      assert.equal((await s.listRuns('old')).length, 3);
      assert.equal(counting.calls.readFile, undefined);
    });

    it('keeps the sizes a fresh walk would find, through runs, streams, deletes and discards', async () => {
      assert.equal(await u.store.totalBytes(), 0);
      const a = await finishedRun('a', 500);
      const b = u.store.beginRun('b', 'l');
      fs.writeFileSync(path.join(b.dir, 'stdout.txt'), 'x'.repeat(70));
      await b.addFile('t.txt', Buffer.from('hello'), 5);
      b.finish(outcome({ stdoutTruncated: true }));
      u.store.beginRun('c', 'l').discard();
      u.now += 1000;
      await finishedRun('a', 7);
      assert.equal(await u.store.totalBytes(), dirBytes(u.root));
      assert.equal(await u.store.totalBytes(), await new ArtifactStore(u.root).totalBytes());
      assert.equal(await u.store.deleteRun('a', a.runId), true);
      assert.equal(await u.store.totalBytes(), dirBytes(u.root));
      assert.equal(await u.store.deleteSession('b'), 1);
      assert.equal(await u.store.totalBytes(), dirBytes(u.root));
    });

    it('measures a run being written again at each prune, so its growth counts', async () => {
      assert.equal(await u.store.totalBytes(), 0);
      const writing = u.store.beginRun('s', 'l');
      await writing.addFile('a.bin', Buffer.alloc(300), 300);
      assert.deepEqual(await u.store.prune(1_000_000), { deletedRuns: 0, freedBytes: 0, totalBytes: 300, chats: [] });
      await writing.addFile('b.bin', Buffer.alloc(200), 200);
      assert.deepEqual(await u.store.prune(1_000_000), { deletedRuns: 0, freedBytes: 0, totalBytes: 500, chats: [] });
    });

    it("does not count a run another window deleted first as freed", async () => {
      const gone = await finishedRun('s', 1000);
      u.now += 1000;
      const kept = await finishedRun('s', 10);
      assert.equal(await u.store.totalBytes(), dirBytes(u.root));
      fs.rmSync(gone.dir, { recursive: true });
      assert.deepEqual(await u.store.prune(dirBytes(kept.dir)), { deletedRuns: 0, freedBytes: 0, totalBytes: dirBytes(kept.dir), chats: [] });
    });

    it("lists another window's unfinished run once it finished, and its new runs after reload", async () => {
      const other = new ArtifactStore(u.root, { now: () => u.now });
      const inFlight = other.beginRun('o', 'theirs');
      assert.deepEqual(await u.store.listSessions(), []);
      inFlight.finish(outcome());
      await u.store.prune(1_000_000);
      assert.deepEqual((await u.store.listSessions()).map((x) => [x.sessionDigest, x.runCount]), [['o', 1]]);

      u.now += 1000;
      const later = other.beginRun('o', 'theirs');
      later.finish(outcome());
      assert.equal((await u.store.listRuns('o')).length, 1);
      let changes = 0;
      u.store.onDidChange(() => changes++);
      await u.store.reload();
      assert.equal(changes, 1);
      assert.deepEqual((await u.store.listRuns('o')).map((r) => r.runId), [later.runId, inFlight.runId]);
    });

    it('walks again after an operation failed half way', async () => {
      const w = await finishedRun('s', 10);
      assert.equal(await u.store.totalBytes(), dirBytes(u.root));
      let failRm = true;
      const flaky: StoreFs = {
        ...fs.promises,
        rm: async (target, options) => {
          if (failRm) throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
          await fs.promises.rm(target, options);
        },
      };
      const s = new ArtifactStore(u.root, { now: () => u.now, fs: flaky });
      await assert.rejects(s.deleteRun('s', w.runId), /EACCES/);
      failRm = false;
      fs.writeFileSync(path.join(w.dir, 'stderr.txt'), 'late');
      assert.equal(await s.totalBytes(), dirBytes(u.root));
      assert.equal(await s.deleteRun('s', w.runId), true);
      assert.equal(await s.totalBytes(), 0);
    });
  });
});
