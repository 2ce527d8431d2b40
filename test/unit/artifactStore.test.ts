import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { ToolError } from '../../src/core/errors';
import { RunRecord, writeFileAtomic } from '../../src/storage/artifactStore';
import { PNG, finishedRunIn, outcome, tree, useStore } from './storeFixtures';
import { rejectedToolError } from './toolErrors';

/** The model message of the invalid_input ToolError `p` rejects with. */
const refused = async (p: Promise<unknown>): Promise<string> => (await rejectedToolError(p, 'invalid_input')).modelMessage;

describe('artifact store (unit)', () => {
  const u = useStore('artifact-store-');
  const finishedRun = (session: string, size: number, label?: string) => finishedRunIn(u.store, session, size, label);

  describe('layout and records', () => {
    it('lays a run out as <session>/<runId>/{files/<name>, run.json}', async () => {
      const w = u.store.beginRun('abc123', 'chat 1234');
      assert.match(w.runId, /^20250102T030405678Z-[0-9a-f]{6}$/);
      assert.equal(w.dir, path.join(u.root, 'abc123', w.runId));
      assert.equal(w.filesDir, path.join(u.root, 'abc123', w.runId, 'files'));
      assert.deepEqual(tree(u.root), ['abc123/', `abc123/${w.runId}/`, `abc123/${w.runId}/files/`]);

      assert.deepEqual(await w.addFile('chart.png', PNG, PNG.length), { name: 'chart.png', size: 16, mediaType: 'image/png' });
      assert.deepEqual(await w.addFile('out/table.csv', Readable.from([Buffer.from('a,b\n'), Buffer.from('1,2\n')]), 8), {
        name: 'out/table.csv',
        size: 8,
      });
      assert.deepEqual(await w.addFile('empty.txt', Buffer.alloc(0), 0), { name: 'empty.txt', size: 0 });
      const record = w.finish(outcome());

      assert.deepEqual(tree(u.root), [
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
      assert.deepEqual(u.store.readRun('abc123', w.runId), record);
    });

    it('takes the media type from the bytes, never from the name', async () => {
      const w = u.store.beginRun('s', 'l');
      const svg = Buffer.from('<svg><script>alert(1)</script></svg>');
      assert.deepEqual(await w.addFile('chart.png.svg', svg, svg.length), { name: 'chart.png.svg', size: svg.length });
      assert.deepEqual(await w.addFile('picture.txt', PNG, PNG.length), { name: 'picture.txt', size: 16, mediaType: 'image/png' });
      // A PNG signature split across stream chunks is still seen.
      const chunks = Readable.from([PNG.subarray(0, 3), PNG.subarray(3, 5), PNG.subarray(5)]);
      assert.deepEqual(await w.addFile('split.png', chunks, PNG.length), { name: 'split.png', size: 16, mediaType: 'image/png' });
    });

    it('stores names in NFC and refuses them by classifyName', async () => {
      const w = u.store.beginRun('s', 'l');
      assert.deepEqual(await w.addFile('cafe\u0301.txt', Buffer.from('x'), 1), { name: 'caf\u00e9.txt', size: 1 });
      assert.ok(fs.existsSync(path.join(w.filesDir, 'caf\u00e9.txt')));
    });

    it('gives strictly increasing, unique run ids within one millisecond', () => {
      const ids = Array.from({ length: 5 }, () => u.store.beginRun('s', 'l').runId);
      assert.deepEqual(
        ids.map((id) => id.slice(0, 19)),
        ['20250102T030405678Z', '20250102T030405679Z', '20250102T030405680Z', '20250102T030405681Z', '20250102T030405682Z'],
      );
      assert.deepEqual([...ids].sort(), ids);
    });

    it('writes run.json atomically: only the record remains, and no temporary file', async () => {
      const w = u.store.beginRun('s', 'l');
      w.finish(outcome());
      assert.deepEqual(fs.readdirSync(w.dir).sort(), ['files', 'run.json']);
      assert.ok(fs.readFileSync(path.join(w.dir, 'run.json'), 'utf8').endsWith('}\n'));
    });

    it("flushes an exported file to the disk before its rename, and a run's record not (it is on the call's way)", () => {
      // The module itself: what `import * as fs` gives here has getters only.
      const nodeFs = createRequire(__filename)('node:fs') as typeof fs;
      const flushed: number[] = [];
      const fsync = nodeFs.fsyncSync;
      nodeFs.fsyncSync = (fd: number) => {
        flushed.push(fd);
        fsync(fd);
      };
      try {
        u.store.beginRun('s', 'l').finish(outcome());
        assert.equal(flushed.length, 0);
        writeFileAtomic(path.join(u.root, 'chat.ipynb'), '{}\n');
        assert.equal(flushed.length, 1);
      } finally {
        nodeFs.fsyncSync = fsync;
      }
      assert.equal(fs.readFileSync(path.join(u.root, 'chat.ipynb'), 'utf8'), '{}\n');
    });

    it('refuses an invalid record and leaves the run unlisted', async () => {
      const w = u.store.beginRun('s', 'l');
      assert.throws(() => w.finish(outcome({ startedAt: 'yesterday' })));
      assert.equal(fs.existsSync(path.join(w.dir, 'run.json')), false);
      assert.deepEqual(await u.store.listRuns('s'), []);
    });

    it('refuses to add or finish after finishing', async () => {
      const w = u.store.beginRun('s', 'l');
      w.finish(outcome());
      assert.throws(() => w.finish(outcome()), /already finished/);
      await assert.rejects(w.addFile('a', Buffer.from('a'), 1), /already finished/);
    });

    it('keeps whole streams beside the record and finds them', async () => {
      const w = u.store.beginRun('s', 'l');
      fs.writeFileSync(path.join(w.dir, 'stdout.txt'), 'everything');
      w.finish(outcome({ stdoutTruncated: true }));
      assert.equal(await u.store.streamFile('s', w.runId, 'stdout'), path.join(w.dir, 'stdout.txt'));
      assert.equal(await u.store.streamFile('s', w.runId, 'stderr'), undefined);
    });

    it('resolves stored file paths inside the run and refuses others', () => {
      const w = u.store.beginRun('s', 'l');
      assert.equal(u.store.filePath('s', w.runId, 'out/a.png'), path.join(w.filesDir, 'out', 'a.png'));
      assert.throws(() => u.store.filePath('s', w.runId, '../run.json'), ToolError);
    });

    it('refuses ids that are not the store’s own', () => {
      assert.throws(() => u.store.beginRun('../x', 'l'), /not a session digest/);
      assert.throws(() => u.store.beginRun('', 'l'), /not a session digest/);
      assert.throws(() => u.store.readRun('s', '../../etc'), /not a run id/);
      assert.throws(() => u.store.deleteRun('s/..', '20250102T030405678Z-abcdef'), /not a session digest/);
    });

    it("knows a chat by its folder on disk, also one another window of the root began after this one's index was read", async () => {
      await finishedRun('mine', 1);
      assert.equal((await u.store.listRuns('theirs')).length, 0);
      fs.mkdirSync(path.join(u.root, 'theirs'));
      assert.deepEqual([await u.store.hasSession('mine'), await u.store.hasSession('theirs'), await u.store.hasSession('never')], [true, true, false]);
      assert.equal(await u.store.hasSession('..'), false);
      await u.store.deleteSession('mine');
      assert.equal(await u.store.hasSession('mine'), false);
    });
  });

  describe('files are never overwritten and never leave the run', () => {
    it('refuses a second file of the same name and keeps the first', async () => {
      const w = u.store.beginRun('s', 'l');
      await w.addFile('a.txt', Buffer.from('first'), 5);
      assert.equal(
        await refused(w.addFile('a.txt', Buffer.from('second'), 6)),
        '"a.txt" was already saved for this run; a stored file is never overwritten.',
      );
      assert.equal(fs.readFileSync(path.join(w.filesDir, 'a.txt'), 'utf8'), 'first');
      assert.deepEqual(w.files, [{ name: 'a.txt', size: 5 }]);
    });

    it('refuses traversing names without writing anything', async () => {
      const w = u.store.beginRun('s', 'l');
      for (const name of ['../run.json', '../../../escape.txt', '/tmp/x', 'a\\..\\..\\b', 'C:x', 'a/./b', '']) {
        assert.equal(await refused(w.addFile(name, Buffer.from('x'), 1)), 'An output file name is not a plain relative path; that file was not saved.');
      }
      assert.deepEqual(tree(u.tmp), ['store/', 'store/s/', `store/s/${w.runId}/`, `store/s/${w.runId}/files/`]);
    });

    it('refuses to write through a symbolic link planted in the files folder', async function () {
      const w = u.store.beginRun('s', 'l');
      const outside = path.join(u.tmp, 'outside');
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
      const w = u.store.beginRun('s', 'l');
      await w.addFile('out', Buffer.from('x'), 1);
      assert.equal(
        await refused(w.addFile('out/b.txt', Buffer.from('x'), 1)),
        '"out/b.txt" was not saved: a file of this run already uses part of its path as a name.',
      );
    });

    it('refuses a file that grew or shrank after its size was checked, leaving nothing behind', async () => {
      const w = u.store.beginRun('s', 'l');
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
      const w = u.store.beginRun('s', 'l');
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
      const w = u.store.beginRun('s', 'l');
      await assert.rejects(w.addFile('a', Buffer.alloc(1), -1), /invalid expected size/);
      await assert.rejects(w.addFile('a', Buffer.alloc(1), 1.5), /invalid expected size/);
    });
  });

  describe('listing', () => {
    it('lists runs newest first and sessions most recently used first', async () => {
      const a1 = await finishedRun('aaa', 1, 'old label');
      u.now += 1000;
      const b1 = await finishedRun('bbb', 1);
      u.now += 1000;
      const a2 = await finishedRun('aaa', 1, 'new label');
      assert.deepEqual(
        (await u.store.listRuns('aaa')).map((r) => r.runId),
        [a2.runId, a1.runId],
      );
      assert.deepEqual(await u.store.listSessions(), [
        { sessionDigest: 'aaa', sessionLabel: 'new label', runCount: 2, latestRunId: a2.runId, latestStartedAt: '2025-01-02T03:04:05.678Z', firstStartedAt: '2025-01-02T03:04:05.678Z', firstProgram: 'print(1)' },
        { sessionDigest: 'bbb', sessionLabel: 'label bbb', runCount: 1, latestRunId: b1.runId, latestStartedAt: '2025-01-02T03:04:05.678Z', firstStartedAt: '2025-01-02T03:04:05.678Z', firstProgram: 'print(1)' },
      ]);
    });

    it('skips a run whose record is missing, corrupt, misplaced or names a path outside the run', async () => {
      const good = await finishedRun('s', 1);
      const unfinished = u.store.beginRun('s', 'l');
      const garbage = await finishedRun('s', 1);
      fs.writeFileSync(path.join(garbage.dir, 'run.json'), '{"version": 1, "runId": tru');
      const wrongShape = await finishedRun('s', 1);
      fs.writeFileSync(path.join(wrongShape.dir, 'run.json'), JSON.stringify({ version: 2 }));
      const copied = await finishedRun('s', 1);
      fs.copyFileSync(path.join(good.dir, 'run.json'), path.join(copied.dir, 'run.json'));
      const tampered = await finishedRun('s', 1);
      const record = RunRecord.parse(JSON.parse(fs.readFileSync(path.join(tampered.dir, 'run.json'), 'utf8')));
      fs.writeFileSync(path.join(tampered.dir, 'run.json'), JSON.stringify({ ...record, files: [{ name: '../../x', size: 1 }] }));
      fs.mkdirSync(path.join(u.root, 's', 'not-a-run'));
      fs.writeFileSync(path.join(u.root, 'stray.txt'), 'x');

      assert.deepEqual(
        (await u.store.listRuns('s')).map((r) => r.runId),
        [good.runId],
      );
      for (const w of [unfinished, garbage, wrongShape, copied, tampered]) assert.equal(u.store.readRun('s', w.runId), undefined);
      assert.equal((await u.store.listSessions()).length, 1);
      assert.deepEqual(await u.store.listRuns('nobody'), []);
    });

    it('lists nothing, and counts nothing, before the root exists', async () => {
      assert.deepEqual(await u.store.listSessions(), []);
      assert.equal(await u.store.totalBytes(), 0);
      assert.deepEqual(await u.store.prune(0), { deletedRuns: 0, freedBytes: 0, totalBytes: 0, chats: [] });
      assert.equal(await u.store.clear(), 0);
    });
  });

  describe('deleting', () => {
    it('deletes a run, then its empty session, and reports whether anything was deleted', async () => {
      const w = await finishedRun('s', 1);
      assert.equal(await u.store.deleteRun('s', w.runId), true);
      assert.equal(await u.store.deleteRun('s', w.runId), false);
      assert.deepEqual(fs.readdirSync(u.root), []);
    });

    it('deletes sessions and clears the store, sparing a run still being written', async () => {
      await finishedRun('a', 1);
      await finishedRun('a', 1);
      await finishedRun('b', 1);
      const writing = u.store.beginRun('b', 'l');
      assert.equal(await u.store.deleteRun('b', writing.runId), false);
      assert.equal(await u.store.deleteSession('a'), 2);
      assert.deepEqual(fs.readdirSync(u.root), ['b']);
      assert.equal(await u.store.clear(), 1);
      assert.deepEqual(tree(u.root), ['b/', `b/${writing.runId}/`, `b/${writing.runId}/files/`]);
      writing.finish(outcome());
      assert.equal(await u.store.clear(), 1);
      assert.deepEqual(fs.readdirSync(u.root), []);
    });

    it('discard removes a run that should leave no trace', async () => {
      const w = u.store.beginRun('s', 'l');
      await w.addFile('a', Buffer.from('a'), 1);
      w.discard();
      assert.deepEqual(fs.readdirSync(path.join(u.root, 's')), []);
      assert.throws(() => w.finish(outcome()), /already finished/);
    });
  });
});
