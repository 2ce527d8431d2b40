import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { sessionDigest } from '../../src/core/session';
import { ArtifactStore } from '../../src/storage/artifactStore';
import { RunRecording } from '../../src/storage/runRecorder';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]);

const outcome = {
  startedAt: '2025-01-02T03:04:05.678Z',
  durationMs: 12,
  image: 'python:3.12-slim',
  exitCode: 0,
  timedOut: false,
  cancelled: false,
  program: 'print(1)',
  resultText: 'stdout:\n1',
  filesIn: [],
  stdoutTruncated: false,
  stderrTruncated: false,
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
      const [run] = store.listRuns(sessionDigest('cli:nightly'));
      assert.deepEqual(
        { ...run, runId: undefined },
        { ...outcome, version: 1, runId: undefined, sessionKeyDigest: sessionDigest('cli:nightly'), sessionLabel: 'session nightly', files: [{ name: 'chart.png', size: 16, mediaType: 'image/png' }] },
      );
      assert.deepEqual(fs.readFileSync(path.join(recording.writer.filesDir, 'chart.png')), PNG);
    });

    it('leaves nothing behind for a run that is begun and discarded', () => {
      const store = new ArtifactStore(path.join(dir, 'runs'));
      const recording = new RunRecording(store, 'mcp:0123456789ab');
      const runDir = recording.writer.dir;
      assert.ok(fs.existsSync(runDir));
      recording.record().discard();
      assert.equal(fs.existsSync(runDir), false);
      assert.deepEqual(store.listSessions(), []);
    });
  });
});
