import * as assert from 'node:assert/strict';
import { StreamCapture, capturedFromString } from '../../src/core/capture';
import { NOTHING_PRINTED, clip, formatResult, splitBudget } from '../../src/core/format';

const none = capturedFromString('');

describe('result formatting (unit)', () => {
  it('stdout only, trailing newline dropped', () => {
    assert.equal(formatResult({ stdout: capturedFromString('hello world\n'), stderr: none, exitCode: 0 }, 7800), 'stdout:\nhello world');
  });

  it('stderr and a non-zero exit code get their own sections', () => {
    assert.equal(
      formatResult({ stdout: capturedFromString('a\n'), stderr: capturedFromString('boom\n'), exitCode: 3 }, 7800),
      'stdout:\na\n\nstderr:\nboom\n\nexit code: 3',
    );
  });

  it('a silent program gets the print hint', () => {
    assert.equal(formatResult({ stdout: none, stderr: none, exitCode: 0 }, 7800), NOTHING_PRINTED);
  });

  it('a silent failing program gets its exit code, not the hint', () => {
    assert.equal(formatResult({ stdout: none, stderr: none, exitCode: 2 }, 7800), 'exit code: 2');
  });

  it('timeout, cancellation, output flood and memory kill are explained', () => {
    assert.equal(
      formatResult({ stdout: capturedFromString('start\n'), stderr: none, exitCode: null, timedOut: { seconds: 2 } }, 7800),
      'stdout:\nstart\n\nThe program did not finish within 2 s and was stopped. Make it faster, work on less data, or print partial results as you go.',
    );
    assert.equal(
      formatResult({ stdout: none, stderr: none, exitCode: null, cancelled: true }, 7800),
      'The run was cancelled by the user and the program was stopped.',
    );
    assert.match(
      formatResult({ stdout: none, stderr: none, exitCode: null, outputLimited: { maxBytes: 64 * 1024 * 1024 } }, 7800),
      /^The program printed more than 64 MB and was stopped\./,
    );
    assert.equal(
      formatResult({ stdout: none, stderr: none, exitCode: 137, oomKilled: { memoryLimitMb: 256 } }, 7800),
      "exit code: 137\n\nThe program was killed because it used more than the sandbox's 256 MB memory limit. Process the data in smaller pieces.",
    );
  });

  it('names memory only when the kernel or the engine says the program was OOM-killed', () => {
    // A SIGKILL from anywhere else (another process, the program itself) says only what is known.
    assert.equal(formatResult({ stdout: none, stderr: none, exitCode: 137 }, 7800), 'exit code: 137');
    assert.equal(formatResult({ stdout: none, stderr: none, exitCode: 1 }, 7800), 'exit code: 1');
  });

  it('splits the budget: both fit, small stream keeps all, else half and half', () => {
    assert.deepEqual(splitBudget(100, 200, 1000), [100, 200]);
    assert.deepEqual(splitBudget(5000, 100, 1000), [900, 100]);
    assert.deepEqual(splitBudget(100, 5000, 1000), [100, 900]);
    assert.deepEqual(splitBudget(5000, 5000, 1000), [500, 500]);
  });

  it('cuts a long stream to head and tail with an exact marker', () => {
    const capture = new StreamCapture(100);
    const lines = Array.from({ length: 1000 }, (_, i) => `line ${i}`).join('\n') + '\n';
    capture.write(Buffer.from(lines));
    const text = clip(capture.snapshot(), 100);
    const head = lines.slice(0, 50);
    const tail = lines.slice(lines.length - 50).replace(/\n$/, '');
    const omitted = Buffer.byteLength(lines) - 100;
    assert.equal(text, `${head}\n[... ${omitted} bytes left out ...]\n${tail}`);
  });

  it('never splits a UTF-8 character', () => {
    const capture = new StreamCapture(64);
    capture.write(Buffer.from('é'.repeat(1000)));
    const text = clip(capture.snapshot(), 21);
    assert.ok(!text.includes('\uFFFD'));
    const m = /^(é*)\n\[\.\.\. (\d+) bytes left out \.\.\.\]\n(é*)$/.exec(text);
    assert.ok(m, text);
    assert.equal(Buffer.byteLength(m[1]!) + Buffer.byteLength(m[3]!) + Number(m[2]), 2000);
  });
});

describe('stream capture (unit)', () => {
  it('keeps a short stream whole', () => {
    const c = new StreamCapture(10);
    c.write(Buffer.from('abc'));
    c.write(Buffer.from('def'));
    const s = c.snapshot();
    assert.equal(Buffer.concat([s.head, s.tail]).toString(), 'abcdef');
    assert.equal(s.totalBytes, 6);
  });

  it('keeps head and tail of a flood in bounded memory', () => {
    const c = new StreamCapture(1000);
    const chunk = Buffer.alloc(64 * 1024, 'x');
    for (let i = 0; i < 800; i++) c.write(chunk); // 50 MB
    c.write(Buffer.from('THE END'));
    const s = c.snapshot();
    assert.equal(s.totalBytes, 800 * 64 * 1024 + 7);
    assert.equal(s.head.length, 1000);
    assert.equal(s.tail.length, 1000);
    assert.ok(s.tail.toString().endsWith('THE END'));
  });

  it('spills a stream too long for the model to a file, whole', async () => {
    const fs = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'capture-'));
    const file = path.join(dir, 'stdout.txt');
    const c = new StreamCapture(10, file);
    c.write(Buffer.from('0123456789'));
    assert.equal(c.spillFile, undefined, 'no file while the model sees everything');
    c.write(Buffer.from('abcdefghij'));
    c.write(Buffer.from('KLMNOPQRST'));
    await c.close();
    assert.equal(c.spillFile, file);
    assert.equal(fs.readFileSync(file, 'utf8'), '0123456789abcdefghijKLMNOPQRST');
    fs.rmSync(dir, { recursive: true });
  });
});
