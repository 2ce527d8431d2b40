import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { extract } from 'tar-stream';
import { ToolError } from '../../src/core/errors';
import { SharedFileChangedError, bytesReader, type StagedFile, type StagedReader } from '../../src/core/sandbox';
import { runArchive } from '../../src/docker/files/runArchive';
import { openChecked, openInside } from '../../src/storage/workspaceFolder';

/** The archive's files by name, each with its bytes (directories with none). */
async function unpacked(archive: Readable): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const ex = extract();
  ex.on('entry', (header, body, next) => {
    const parts: Buffer[] = [];
    body.on('data', (c: unknown) => parts.push(c as Buffer));
    body.on('end', () => {
      files.set(header.name, Buffer.concat(parts));
      next();
    });
  });
  const done = new Promise<void>((resolve, reject) => (ex.on('finish', resolve), ex.on('error', reject)));
  archive.pipe(ex as unknown as Writable);
  await done;
  return files;
}

/**
 * A connection that takes each chunk a while after it is written, the way a socket does, and
 * copies it only then: a buffer used again before the connection said it was written would show
 * here as another chunk's bytes.
 */
function slowConnection(): { to: Writable; received: () => Buffer } {
  const copies: Buffer[] = [];
  let turn = 0;
  const to = new Writable({
    highWaterMark: 64 * 1024,
    write(chunk: Buffer, _encoding, written) {
      setTimeout(() => {
        copies.push(Buffer.from(chunk));
        written();
      }, turn++ % 3);
    },
  });
  // As a request's: the engine client listens (a body given up destroys its request with the reason).
  to.on('error', () => undefined);
  return { to, received: () => Buffer.concat(copies) };
}

function finished(to: Writable): Promise<void> {
  return new Promise((resolve, reject) => (to.on('finish', resolve), to.on('error', reject)));
}

/** A file of `bytes` that counts how often it was closed. */
function counted(name: string, bytes: Buffer, size = bytes.length): { file: StagedFile; closes: () => number } {
  let closes = 0;
  const file: StagedFile = {
    name,
    size,
    open: async (): Promise<StagedReader> => {
      const inner = bytesReader(bytes);
      return { read: (into, at) => inner.read(into, at), close: async () => void closes++ };
    },
  };
  return { file, closes: () => closes };
}

describe("a call's archive into the sandbox (unit)", function () {
  const big = randomBytes(5 * 1024 * 1024 + 12345);
  const small = Buffer.from('month,revenue\n1,2\n');

  it('arrives whole through a connection slow to take its chunks, though four 1 MiB buffers carry a 5 MB file', async function () {
    const { file, closes } = counted('data/big.bin', big);
    const body = runArchive('runs/c1', 'print(1)', [file, counted('small.csv', small).file]);
    const { to, received } = slowConnection();
    const done = finished(to);
    assert.equal(body.pipe(to), to);
    await done;
    const files = await unpacked(Readable.from([received()]));
    assert.deepEqual([...files.keys()], ['runs/c1', 'runs/c1/data', 'runs/c1/program.py', 'runs/c1/data/big.bin', 'runs/c1/small.csv']);
    assert.equal(files.get('runs/c1/program.py')!.toString(), 'print(1)');
    assert.ok(files.get('runs/c1/data/big.bin')!.equals(big));
    assert.ok(files.get('runs/c1/small.csv')!.equals(small));
    assert.equal(closes(), 1);
  });

  it('reads the same archive as a plain stream: chunks kept as they came stay whole, the buffers under them used again', async function () {
    const body = runArchive('runs/c2', 'x = 1', [counted('big.bin', big).file]);
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    const files = await unpacked(Readable.from([Buffer.concat(chunks)]));
    assert.ok(files.get('runs/c2/big.bin')!.equals(big));
  });

  for (const [what, bytes, size] of [
    ['grew', Buffer.concat([small, small]), small.length],
    ['shrank', small.subarray(0, 5), small.length],
  ] as const) {
    it(`refuses a file that ${what} after its size was checked, naming it and the size checked, and closes it`, async function () {
      const { file, closes } = counted('sales.csv', bytes, size);
      const body = runArchive('runs/c3', 'x = 1', [file]);
      const { to } = slowConnection();
      const failed = new Promise<Error>((resolve) => body.on('error', resolve));
      body.pipe(to);
      const e = await failed;
      assert.ok(e instanceof ToolError);
      assert.equal(
        e.message,
        `"sales.csv" changed while it was copied into the sandbox (it had ${small.length} bytes when it was checked), so the program did not run. Call again once the file no longer changes.`,
      );
      assert.equal(closes(), 1);
    });
  }

  it('stops reading and closes the file when the engine closes the connection before the end', async function () {
    const { file, closes } = counted('big.bin', big);
    const body = runArchive('runs/c4', 'x = 1', [file]);
    let taken = 0;
    const to = new Writable({
      write(chunk: Buffer, _encoding, written) {
        taken += chunk.length;
        // The engine refuses (its work area is full) after the first megabyte.
        if (taken > 1024 * 1024) to.destroy(new Error('no space left on device'));
        else written();
      },
    });
    to.on('error', () => undefined);
    const failed = new Promise<Error>((resolve) => body.on('error', resolve));
    body.pipe(to);
    assert.equal((await failed).message, 'the engine closed the connection before the archive was sent');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(closes(), 1);
    assert.ok(taken < 3 * 1024 * 1024, `read on to ${taken} bytes`);
  });

  it('given up half sent (the deadline, a refused connection), ends its request and closes its files, throwing nothing', async function () {
    const { file, closes } = counted('big.bin', big);
    // A program larger than the pack holds, still being written when the send is given up.
    const body = runArchive('runs/c6', `x = ${JSON.stringify('y'.repeat(200_000))}`, [file]);
    const to = new Writable({ highWaterMark: 1, write() {} });
    to.on('error', () => undefined);
    body.pipe(to);
    await new Promise((resolve) => setImmediate(resolve));
    body.destroy();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual([to.destroyed, to.writableEnded, closes()], [true, false, 1]);
  });

  describe('a workspace file that is no longer the one checked', function () {
    let dir: string;
    beforeEach(function () {
      dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-share-')));
      fs.writeFileSync(path.join(dir, 'sales.csv'), small);
      fs.writeFileSync(path.join(dir, 'other.csv'), small);
      fs.mkdirSync(path.join(dir, 'outside'));
    });
    afterEach(function () {
      fs.rmSync(dir, { recursive: true, force: true });
    });

    async function sendAfter(swap: (file: string) => void): Promise<Error | undefined> {
      const file = path.join(dir, 'sales.csv');
      const opened = await openInside(dir, file);
      if ('refused' in opened) throw new Error(opened.refused);
      swap(file);
      const body = runArchive('runs/c5', 'x = 1', [{ name: 'sales.csv', ...opened }]);
      const { to } = slowConnection();
      const outcome = Promise.race([
        new Promise<Error>((resolve) => body.on('error', resolve)),
        finished(to).then(() => undefined),
      ]);
      body.pipe(to);
      return outcome;
    }

    const replaced =
      '"sales.csv" was removed or replaced after it was checked, so nothing was shared and the program did not run. Call again to share the file as it is now.';

    it('is refused when its name now leads out of the workspace through a link', async function () {
      fs.writeFileSync(path.join(dir, 'outside', 'secret'), 'the same size here...');
      const e = await sendAfter((file) => {
        fs.rmSync(file);
        fs.symlinkSync(path.join(dir, 'outside', 'secret'), file);
      });
      assert.equal(e?.message, replaced);
    });

    it('is refused, without waiting, when a FIFO took its place', async function () {
      const e = await sendAfter((file) => {
        fs.rmSync(file);
        execFileSync('mkfifo', [file]);
      });
      assert.equal(e?.message, replaced);
    });

    it('is refused when another file was renamed over it', async function () {
      const e = await sendAfter((file) => fs.renameSync(path.join(dir, 'other.csv'), file));
      assert.equal(e?.message, replaced);
    });

    it('is refused when it was removed', async function () {
      const e = await sendAfter((file) => fs.rmSync(file));
      assert.equal(e?.message, replaced);
    });

    it('is refused when a folder on its way was a link to a folder outside while it was checked and opened', async function () {
      // What a swap between the check's realpath and its stat leaves: the inode checked is the outside file's.
      fs.mkdirSync(path.join(dir, 'outside', 'sub'));
      fs.writeFileSync(path.join(dir, 'outside', 'sub', 'sales.csv'), 'the secret');
      const checked = await fs.promises.lstat(path.join(dir, 'outside', 'sub', 'sales.csv'), { bigint: true });
      fs.symlinkSync(path.join(dir, 'outside', 'sub'), path.join(dir, 'sub'));
      await assert.rejects(openChecked(path.join(dir, 'sub', 'sales.csv'), checked), (e: Error) => e instanceof SharedFileChangedError && e.how === 'replaced');
    });

    it('is shared when it is still the file checked', async function () {
      assert.equal(await sendAfter(() => undefined), undefined);
    });
  });
});
