import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import type { Logger } from '../../src/core/logger';
import { sessionDigest } from '../../src/core/session';
import { ArtifactStore } from '../../src/storage/artifactStore';
import { readImageAttachments } from '../../src/storage/imageAttachments';
import { RunRecording } from '../../src/storage/runRecorder';
import { foldersSource } from '../../src/storage/workspaceFolders';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]);

function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (m: string) => lines.push(`${level}: ${m}`);
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const outcome = {
  startedAt: '2025-01-02T03:04:05.678Z',
  durationMs: 12,
  image: 'python:3.12-slim',
  sandboxId: 'c0ffee',
  runtime: 'runsc',
  exitCode: 0,
  timedOut: false,
  cancelled: false,
  program: 'print(1)',
  resultText: 'stdout:\n1',
  filesIn: [],
  stdoutTruncated: false,
  stderrTruncated: false,
  stdout: '1',
  stderr: '',
  stdoutBytes: 2,
  stderrBytes: 0,
  oomKilled: false,
  outputLimited: false,
  timeoutMs: 30_000,
  memoryMb: 1024,
  state: { reset: false, kept: true },
};

describe('storage adapters (unit)', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-adapters-')));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  describe('RunRecording', () => {
    it('begins no run until it is used, then records one run of the session', async () => {
      const store = new ArtifactStore(path.join(dir, 'runs'));
      const recording = new RunRecording(store, 'cli:nightly');
      assert.equal(recording.begun, undefined);
      assert.equal(fs.existsSync(store.root), false);
      const recorder = recording.record();
      assert.equal(recording.begun, recording.writer);
      assert.equal(recorder.dir, recording.writer.dir);
      assert.deepEqual(await recorder.addFile('chart.png', Readable.from([PNG]), PNG.length), { name: 'chart.png', size: 16, mediaType: 'image/png' });
      recorder.finish(outcome);
      recorder.discard();
      const [run] = await store.listRuns(sessionDigest('cli:nightly'));
      // The seal's key is the store's own, made at random.
      assert.match(run!.stateSeal!, /^[0-9a-f]{64}$/);
      assert.deepEqual(
        { ...run, runId: undefined, stateSeal: undefined },
        { ...outcome, version: 1, runId: undefined, stateSeal: undefined, sessionKeyDigest: sessionDigest('cli:nightly'), sessionLabel: 'session nightly', files: [{ name: 'chart.png', size: 16, mediaType: 'image/png' }] },
      );
      assert.deepEqual(fs.readFileSync(path.join(recording.writer.filesDir, 'chart.png')), PNG);
    });

    it('leaves nothing behind for a run that is begun and discarded', async () => {
      const store = new ArtifactStore(path.join(dir, 'runs'));
      const recording = new RunRecording(store, 'mcp:0123456789ab');
      const runDir = recording.writer.dir;
      assert.ok(fs.existsSync(runDir));
      recording.record().discard();
      assert.equal(fs.existsSync(runDir), false);
      assert.deepEqual(await store.listSessions(), []);
    });
  });

  describe('foldersSource', () => {
    beforeEach(() => {
      for (const [file, text] of [
        ['app/data/sales.csv', 'a'],
        ['app/README.md', 'bb'],
        ['lib/util.py', 'ccc'],
      ]) {
        fs.mkdirSync(path.dirname(path.join(dir, file!)), { recursive: true });
        fs.writeFileSync(path.join(dir, file!), text!);
      }
    });

    it('is nothing without folders', () => {
      assert.equal(foldersSource([]), undefined);
    });

    it("names one folder's files by their relative names", async () => {
      const source = foldersSource([{ name: 'app', path: path.join(dir, 'app') }])!;
      assert.deepEqual((await source.list()).sort(), ['README.md', 'data/sales.csv']);
      const opened = await source.open('data/sales.csv');
      assert.ok('size' in opened);
      assert.equal(opened.size, 1);
    });

    it("qualifies several folders' files by the folder's name, as a VS Code multi-root workspace does", async () => {
      const source = foldersSource([
        { name: 'app', path: path.join(dir, 'app') },
        { name: 'lib', path: path.join(dir, 'lib') },
      ])!;
      assert.deepEqual((await source.list()).sort(), ['app/README.md', 'app/data/sales.csv', 'lib/util.py']);
      const opened = await source.open('lib/util.py');
      assert.ok('size' in opened);
      assert.equal(opened.size, 3);
      assert.deepEqual(await source.open('docs/util.py'), { refused: 'is not in any workspace folder.' });
      assert.deepEqual(await source.open('lib'), { refused: 'is not in any workspace folder.' });
    });
  });

  describe('readImageAttachments', () => {
    it('reads the images within the size limit and skips other files', () => {
      fs.mkdirSync(path.join(dir, 'plots'));
      fs.writeFileSync(path.join(dir, 'plots', 'a.png'), PNG);
      fs.writeFileSync(path.join(dir, 'big.png'), Buffer.concat([PNG, Buffer.alloc(100)]));
      fs.writeFileSync(path.join(dir, 'table.csv'), 'x,y\n');
      const log = recordingLogger();
      const images = readImageAttachments(
        dir,
        [
          { name: 'plots/a.png', size: 16, mediaType: 'image/png' },
          { name: 'big.png', size: 116, mediaType: 'image/png' },
          { name: 'table.csv', size: 4 },
        ],
        100,
        log,
      );
      assert.deepEqual(images, [{ name: 'plots/a.png', mimeType: 'image/png', bytes: PNG }]);
      assert.deepEqual(log.lines, []);
    });

    it('logs an image that cannot be read and goes on', () => {
      fs.writeFileSync(path.join(dir, 'b.png'), PNG);
      const log = recordingLogger();
      const images = readImageAttachments(
        dir,
        [
          { name: 'gone.png', size: 16, mediaType: 'image/png' },
          { name: 'b.png', size: 16, mediaType: 'image/png' },
        ],
        1024,
        log,
      );
      assert.deepEqual(images, [{ name: 'b.png', mimeType: 'image/png', bytes: PNG }]);
      assert.equal(log.lines.length, 1);
      assert.match(log.lines[0]!, /^warn: could not attach gone\.png: Error \(ENOENT\): ENOENT: no such file or directory/);
    });
  });
});
