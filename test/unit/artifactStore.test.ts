import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { ToolError } from '../../src/core/errors';
import { ArtifactStore, RunRecord, type RunOutcome } from '../../src/storage/artifactStore';

const T0 = Date.UTC(2025, 0, 2, 3, 4, 5, 678);
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]);
const HOUR = 60 * 60 * 1000;

function outcome(over: Partial<RunOutcome> = {}): RunOutcome {
  return {
    startedAt: '2025-01-02T03:04:05.678Z',
    durationMs: 1234,
    image: 'python:3.12-slim',
    exitCode: 0,
    timedOut: false,
    cancelled: false,
    program: 'print(1)',
    resultText: '1',
    filesIn: ['data/a.csv'],
    stdoutTruncated: false,
    stderrTruncated: false,
    ...over,
  };
}

/** Asserts an invalid_input ToolError and returns its model message. */
async function refused(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ToolError, `expected a ToolError, got ${String(e)}`);
    assert.equal(e.code, 'invalid_input');
    return e.modelMessage;
  }
  assert.fail('expected a refusal');
}

function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        out.push(`${r}/`);
        walk(path.join(d, e.name), r);
      } else out.push(r);
    }
  };
  walk(dir, '');
  return out;
}

function dirBytes(dir: string): number {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? dirBytes(p) : fs.lstatSync(p).size;
  }
  return total;
}

describe('artifact store (unit)', () => {
  let tmp: string;
  let root: string;
  let clock: number;
  let store: ArtifactStore;

  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'artifact-store-'));
    root = path.join(tmp, 'store');
    clock = T0;
    store = new ArtifactStore(root, { now: () => clock });
  });

  afterEach(() => {
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  /** A finished run with one file of `size` bytes, at the current clock. */
  async function finishedRun(session: string, size: number, label = `label ${session}`) {
    const w = store.beginRun(session, label);
    await w.addFile('out.bin', Buffer.alloc(size, 1), size);
    w.finish(outcome());
    return w;
  }

  describe('layout and records', () => {
    it('lays a run out as <session>/<runId>/{files/<name>, run.json}', async () => {
      const w = store.beginRun('abc123', 'chat 1234');
      assert.match(w.runId, /^20250102T030405678Z-[0-9a-f]{6}$/);
      assert.equal(w.dir, path.join(root, 'abc123', w.runId));
      assert.equal(w.filesDir, path.join(root, 'abc123', w.runId, 'files'));
      assert.deepEqual(tree(root), ['abc123/', `abc123/${w.runId}/`, `abc123/${w.runId}/files/`]);

      assert.deepEqual(await w.addFile('chart.png', PNG, PNG.length), { name: 'chart.png', size: 16, mediaType: 'image/png' });
      assert.deepEqual(await w.addFile('out/table.csv', Readable.from([Buffer.from('a,b\n'), Buffer.from('1,2\n')]), 8), {
        name: 'out/table.csv',
        size: 8,
      });
      assert.deepEqual(await w.addFile('empty.txt', Buffer.alloc(0), 0), { name: 'empty.txt', size: 0 });
      const record = w.finish(outcome());

      assert.deepEqual(tree(root), [
        'abc123/',
        `abc123/${w.runId}/`,
        `abc123/${w.runId}/files/`,
        `abc123/${w.runId}/files/chart.png`,
        `abc123/${w.runId}/files/empty.txt`,
        `abc123/${w.runId}/files/out/`,
        `abc123/${w.runId}/files/out/table.csv`,
        `abc123/${w.runId}/run.json`,
      ]);
      assert.equal(fs.readFileSync(path.join(w.filesDir, 'out', 'table.csv'), 'utf8'), 'a,b\n1,2\n');
      assert.deepEqual(fs.readFileSync(path.join(w.filesDir, 'chart.png')), PNG);
      assert.deepEqual(record, {
        ...outcome(),
        version: 1,
        runId: w.runId,
        sessionKeyDigest: 'abc123',
        sessionLabel: 'chat 1234',
        files: [
          { name: 'chart.png', size: 16, mediaType: 'image/png' },
          { name: 'out/table.csv', size: 8 },
          { name: 'empty.txt', size: 0 },
        ],
      });
      assert.deepEqual(JSON.parse(fs.readFileSync(path.join(w.dir, 'run.json'), 'utf8')), record);
      assert.deepEqual(store.readRun('abc123', w.runId), record);
    });

    it('takes the media type from the bytes, never from the name', async () => {
      const w = store.beginRun('s', 'l');
      const svg = Buffer.from('<svg><script>alert(1)</script></svg>');
      assert.deepEqual(await w.addFile('chart.png.svg', svg, svg.length), { name: 'chart.png.svg', size: svg.length });
      assert.deepEqual(await w.addFile('picture.txt', PNG, PNG.length), { name: 'picture.txt', size: 16, mediaType: 'image/png' });
      // A PNG signature split across stream chunks is still seen.
      const chunks = Readable.from([PNG.subarray(0, 3), PNG.subarray(3, 5), PNG.subarray(5)]);
      assert.deepEqual(await w.addFile('split.png', chunks, PNG.length), { name: 'split.png', size: 16, mediaType: 'image/png' });
    });

    it('stores names in NFC and refuses them by classifyName', async () => {
      const w = store.beginRun('s', 'l');
      assert.deepEqual(await w.addFile('cafe\u0301.txt', Buffer.from('x'), 1), { name: 'caf\u00e9.txt', size: 1 });
      assert.ok(fs.existsSync(path.join(w.filesDir, 'caf\u00e9.txt')));
    });

    it('gives strictly increasing, unique run ids within one millisecond', () => {
      const ids = Array.from({ length: 5 }, () => store.beginRun('s', 'l').runId);
      assert.deepEqual(
        ids.map((id) => id.slice(0, 19)),
        ['20250102T030405678Z', '20250102T030405679Z', '20250102T030405680Z', '20250102T030405681Z', '20250102T030405682Z'],
      );
      assert.deepEqual([...ids].sort(), ids);
    });

    it('writes run.json atomically: only the record remains, and no temporary file', async () => {
      const w = store.beginRun('s', 'l');
      w.finish(outcome());
      assert.deepEqual(fs.readdirSync(w.dir).sort(), ['files', 'run.json']);
      assert.ok(fs.readFileSync(path.join(w.dir, 'run.json'), 'utf8').endsWith('}\n'));
    });

    it('refuses an invalid record and leaves the run unlisted', () => {
      const w = store.beginRun('s', 'l');
      assert.throws(() => w.finish(outcome({ startedAt: 'yesterday' })));
      assert.equal(fs.existsSync(path.join(w.dir, 'run.json')), false);
      assert.deepEqual(store.listRuns('s'), []);
    });

    it('refuses to add or finish after finishing', async () => {
      const w = store.beginRun('s', 'l');
      w.finish(outcome());
      assert.throws(() => w.finish(outcome()), /already finished/);
      await assert.rejects(w.addFile('a', Buffer.from('a'), 1), /already finished/);
    });

    it('keeps whole streams beside the record and finds them', () => {
      const w = store.beginRun('s', 'l');
      fs.writeFileSync(path.join(w.dir, 'stdout.txt'), 'everything');
      w.finish(outcome({ stdoutTruncated: true }));
      assert.equal(store.streamFile('s', w.runId, 'stdout'), path.join(w.dir, 'stdout.txt'));
      assert.equal(store.streamFile('s', w.runId, 'stderr'), undefined);
    });

    it('resolves stored file paths inside the run and refuses others', () => {
      const w = store.beginRun('s', 'l');
      assert.equal(store.filePath('s', w.runId, 'out/a.png'), path.join(w.filesDir, 'out', 'a.png'));
      assert.throws(() => store.filePath('s', w.runId, '../run.json'), ToolError);
    });

    it('refuses ids that are not the store’s own', () => {
      assert.throws(() => store.beginRun('../x', 'l'), /not a session digest/);
      assert.throws(() => store.beginRun('', 'l'), /not a session digest/);
      assert.throws(() => store.readRun('s', '../../etc'), /not a run id/);
      assert.throws(() => store.deleteRun('s/..', '20250102T030405678Z-abcdef'), /not a session digest/);
    });
  });

  describe('files are never overwritten and never leave the run', () => {
    it('refuses a second file of the same name and keeps the first', async () => {
      const w = store.beginRun('s', 'l');
      await w.addFile('a.txt', Buffer.from('first'), 5);
      assert.equal(
        await refused(w.addFile('a.txt', Buffer.from('second'), 6)),
        '"a.txt" was already saved for this run; a stored file is never overwritten.',
      );
      assert.equal(fs.readFileSync(path.join(w.filesDir, 'a.txt'), 'utf8'), 'first');
      assert.deepEqual(w.files, [{ name: 'a.txt', size: 5 }]);
    });

    it('refuses traversing names without writing anything', async () => {
      const w = store.beginRun('s', 'l');
      for (const name of ['../run.json', '../../../escape.txt', '/tmp/x', 'a\\..\\..\\b', 'C:x', 'a/./b', '']) {
        assert.equal(await refused(w.addFile(name, Buffer.from('x'), 1)), 'An output file name is not a plain relative path; that file was not saved.');
      }
      assert.deepEqual(tree(tmp), ['store/', 'store/s/', `store/s/${w.runId}/`, `store/s/${w.runId}/files/`]);
    });

    it('refuses to write through a symbolic link planted in the files folder', async function () {
      const w = store.beginRun('s', 'l');
      const outside = path.join(tmp, 'outside');
      fs.mkdirSync(outside);
      try {
        fs.symlinkSync(outside, path.join(w.filesDir, 'link'), 'dir');
      } catch {
        this.skip(); // no symlink permission (Windows without developer mode)
      }
      assert.equal(await refused(w.addFile('link/x.txt', Buffer.from('x'), 1)), '"link/x.txt" was not saved: its folder is outside the run\'s folder.');
      assert.equal(await refused(w.addFile('link', Buffer.from('x'), 1)), '"link" was already saved for this run; a stored file is never overwritten.');
      assert.deepEqual(fs.readdirSync(outside), []);
    });

    it('refuses a name whose folder is already a file', async () => {
      const w = store.beginRun('s', 'l');
      await w.addFile('out', Buffer.from('x'), 1);
      assert.equal(
        await refused(w.addFile('out/b.txt', Buffer.from('x'), 1)),
        '"out/b.txt" was not saved: a file of this run already uses part of its path as a name.',
      );
    });

    it('refuses a file that grew or shrank after its size was checked, leaving nothing behind', async () => {
      const w = store.beginRun('s', 'l');
      assert.equal(
        await refused(w.addFile('grew.bin', Readable.from([Buffer.alloc(10), Buffer.alloc(10)]), 15)),
        '"grew.bin" was not saved: it changed while it was being collected (expected 15 bytes).',
      );
      assert.equal(
        await refused(w.addFile('shrank.bin', Buffer.alloc(3), 4)),
        '"shrank.bin" was not saved: it changed while it was being collected (expected 4 bytes).',
      );
      assert.deepEqual(fs.readdirSync(w.filesDir), []);
      assert.deepEqual(w.files, []);
    });

    it('removes a partial file when the source fails', async () => {
      const w = store.beginRun('s', 'l');
      const failing = new Readable({
        read() {
          this.push(Buffer.from('part'));
          this.destroy(new Error('guest went away'));
        },
      });
      await assert.rejects(w.addFile('a.bin', failing, 100), /guest went away/);
      assert.deepEqual(fs.readdirSync(w.filesDir), []);
    });

    it('rejects an impossible expected size as a programming error', async () => {
      const w = store.beginRun('s', 'l');
      await assert.rejects(w.addFile('a', Buffer.alloc(1), -1), /invalid expected size/);
      await assert.rejects(w.addFile('a', Buffer.alloc(1), 1.5), /invalid expected size/);
    });
  });

  describe('listing', () => {
    it('lists runs newest first and sessions most recently used first', async () => {
      const a1 = await finishedRun('aaa', 1, 'old label');
      clock += 1000;
      const b1 = await finishedRun('bbb', 1);
      clock += 1000;
      const a2 = await finishedRun('aaa', 1, 'new label');
      assert.deepEqual(
        store.listRuns('aaa').map((r) => r.runId),
        [a2.runId, a1.runId],
      );
      assert.deepEqual(store.listSessions(), [
        { sessionDigest: 'aaa', sessionLabel: 'new label', runCount: 2, latestRunId: a2.runId, latestStartedAt: '2025-01-02T03:04:05.678Z' },
        { sessionDigest: 'bbb', sessionLabel: 'label bbb', runCount: 1, latestRunId: b1.runId, latestStartedAt: '2025-01-02T03:04:05.678Z' },
      ]);
    });

    it('skips a run whose record is missing, corrupt, misplaced or names a path outside the run', async () => {
      const good = await finishedRun('s', 1);
      const unfinished = store.beginRun('s', 'l');
      const garbage = await finishedRun('s', 1);
      fs.writeFileSync(path.join(garbage.dir, 'run.json'), '{"version": 1, "runId": tru');
      const wrongShape = await finishedRun('s', 1);
      fs.writeFileSync(path.join(wrongShape.dir, 'run.json'), JSON.stringify({ version: 2 }));
      const copied = await finishedRun('s', 1);
      fs.copyFileSync(path.join(good.dir, 'run.json'), path.join(copied.dir, 'run.json'));
      const tampered = await finishedRun('s', 1);
      const record = RunRecord.parse(JSON.parse(fs.readFileSync(path.join(tampered.dir, 'run.json'), 'utf8')));
      fs.writeFileSync(path.join(tampered.dir, 'run.json'), JSON.stringify({ ...record, files: [{ name: '../../x', size: 1 }] }));
      fs.mkdirSync(path.join(root, 's', 'not-a-run'));
      fs.writeFileSync(path.join(root, 'stray.txt'), 'x');

      assert.deepEqual(
        store.listRuns('s').map((r) => r.runId),
        [good.runId],
      );
      for (const w of [unfinished, garbage, wrongShape, copied, tampered]) assert.equal(store.readRun('s', w.runId), undefined);
      assert.equal(store.listSessions().length, 1);
      assert.deepEqual(store.listRuns('nobody'), []);
    });

    it('lists nothing, and counts nothing, before the root exists', () => {
      assert.deepEqual(store.listSessions(), []);
      assert.equal(store.totalBytes(), 0);
      assert.deepEqual(store.prune(0), { deletedRuns: 0, freedBytes: 0, totalBytes: 0 });
      assert.equal(store.clear(), 0);
    });
  });

  describe('deleting', () => {
    it('deletes a run, then its empty session, and reports whether anything was deleted', async () => {
      const w = await finishedRun('s', 1);
      assert.equal(store.deleteRun('s', w.runId), true);
      assert.equal(store.deleteRun('s', w.runId), false);
      assert.deepEqual(fs.readdirSync(root), []);
    });

    it('deletes sessions and clears the store, sparing a run still being written', async () => {
      await finishedRun('a', 1);
      await finishedRun('a', 1);
      await finishedRun('b', 1);
      const writing = store.beginRun('b', 'l');
      assert.equal(store.deleteRun('b', writing.runId), false);
      assert.equal(store.deleteSession('a'), 2);
      assert.deepEqual(fs.readdirSync(root), ['b']);
      assert.equal(store.clear(), 1);
      assert.deepEqual(tree(root), ['b/', `b/${writing.runId}/`, `b/${writing.runId}/files/`]);
      writing.finish(outcome());
      assert.equal(store.clear(), 1);
      assert.deepEqual(fs.readdirSync(root), []);
    });

    it('discard removes a run that should leave no trace', async () => {
      const w = store.beginRun('s', 'l');
      await w.addFile('a', Buffer.from('a'), 1);
      w.discard();
      assert.deepEqual(fs.readdirSync(path.join(root, 's')), []);
      assert.throws(() => w.finish(outcome()), /already finished/);
    });
  });

  describe('size and pruning', () => {
    it('totals every byte under the root', async () => {
      const w = await finishedRun('s', 1000);
      fs.writeFileSync(path.join(w.dir, 'stderr.txt'), 'x'.repeat(24));
      const recordBytes = fs.statSync(path.join(w.dir, 'run.json')).size;
      assert.equal(store.totalBytes(), 1000 + 24 + recordBytes);
    });

    it('deletes the oldest runs across sessions until the store fits the budget', async () => {
      const runs = [];
      for (const session of ['b', 'a', 'c', 'a', 'b']) {
        runs.push(await finishedRun(session, 1000));
        clock += 60_000;
      }
      const sizes = runs.map((w) => dirBytes(w.dir));
      const total = sizes.reduce((x, y) => x + y, 0);
      assert.equal(store.totalBytes(), total);

      // Room for the newest two runs and a little of the third: the three oldest go.
      const budget = sizes[3]! + sizes[4]! + 10;
      assert.deepEqual(store.prune(budget), { deletedRuns: 3, freedBytes: sizes[0]! + sizes[1]! + sizes[2]!, totalBytes: sizes[3]! + sizes[4]! });
      assert.deepEqual(store.listRuns('a').map((r) => r.runId), [runs[3]!.runId]);
      assert.deepEqual(store.listRuns('b').map((r) => r.runId), [runs[4]!.runId]);
      assert.deepEqual(fs.readdirSync(root).sort(), ['a', 'b']);

      assert.deepEqual(store.prune(budget), { deletedRuns: 0, freedBytes: 0, totalBytes: sizes[3]! + sizes[4]! });
      assert.deepEqual(store.prune(0), { deletedRuns: 2, freedBytes: sizes[3]! + sizes[4]!, totalBytes: 0 });
    });

    it('never deletes the run being written, even when it is the oldest', async () => {
      const writing = store.beginRun('s', 'l');
      await writing.addFile('big.bin', Buffer.alloc(5000), 5000);
      clock += 1000;
      const done = await finishedRun('s', 10);
      const result = store.prune(0);
      assert.equal(result.deletedRuns, 1);
      assert.equal(result.totalBytes, 5000);
      assert.ok(fs.existsSync(path.join(writing.filesDir, 'big.bin')));
      assert.equal(fs.existsSync(done.dir), false);
    });

    it("leaves another window's fresh unfinished run alone, and removes one left by a crash", async () => {
      const otherWindow = new ArtifactStore(root, { now: () => clock });
      const theirs = otherWindow.beginRun('s', 'l');
      await theirs.addFile('x', Buffer.alloc(100), 100);
      clock += HOUR;
      assert.deepEqual(store.prune(0), { deletedRuns: 0, freedBytes: 0, totalBytes: 100 });
      clock += 24 * HOUR;
      assert.deepEqual(store.prune(0), { deletedRuns: 1, freedBytes: 100, totalBytes: 0 });
    });
  });

  describe('change notification', () => {
    it('notifies on finish, delete, clear and prune, not on begin or discard, until disposed', async () => {
      let calls = 0;
      const sub = store.onDidChange(() => calls++);
      const throwing = store.onDidChange(() => {
        throw new Error('a broken view');
      });
      const w = store.beginRun('s', 'l');
      assert.equal(calls, 0);
      w.finish(outcome());
      assert.equal(calls, 1);
      store.beginRun('s', 'l').discard();
      assert.equal(calls, 1);
      store.deleteRun('s', w.runId);
      assert.equal(calls, 2);
      await finishedRun('s', 1);
      store.deleteSession('s');
      assert.equal(calls, 4);
      await finishedRun('s', 1);
      store.clear();
      assert.equal(calls, 6);
      await finishedRun('s', 1);
      store.prune(0);
      assert.equal(calls, 8);
      store.prune(0);
      store.clear();
      assert.equal(calls, 8);
      sub.dispose();
      throwing.dispose();
      await finishedRun('s', 1);
      assert.equal(calls, 8);
    });
  });
});
