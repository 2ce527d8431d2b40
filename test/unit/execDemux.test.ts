import * as assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ExecStdout } from '../../src/docker/container/execDemux';

/** One frame of an exec's multiplexed output. */
function frame(kind: 1 | 2, text: string): Buffer {
  const body = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = kind;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}

describe('an exec output demultiplexed with back-pressure (unit)', () => {
  it('passes the stdout on, keeps the tail of the stderr, across frames split anywhere', async () => {
    const all = Buffer.concat([frame(1, 'hello '), frame(2, 'a warning\n'), frame(1, 'world'), frame(2, 'ok\n')]);
    const source = new PassThrough();
    const demux = new ExecStdout(5);
    const got: Buffer[] = [];
    const done = pipeline(
      source,
      demux,
      new Writable({
        write(c: Buffer, _e, next) {
          got.push(c);
          next();
        },
      }),
    );
    for (let i = 0; i < all.length; i += 3) source.write(all.subarray(i, i + 3));
    source.end();
    await done;
    assert.equal(Buffer.concat(got).toString(), 'hello world');
    assert.equal(demux.stderr, 'g\nok\n');
    assert.equal(demux.received, all.length);
  });

  it('fails an output that ends within a frame', async () => {
    const source = new PassThrough();
    const demux = new ExecStdout();
    demux.resume();
    source.end(frame(1, 'cut short').subarray(0, 12));
    await assert.rejects(pipeline(source, demux), { message: 'the output of the exec ended within a frame' });
  });

  it('holds the output back while its reader does not read', async () => {
    const source = new PassThrough();
    const demux = new ExecStdout();
    source.pipe(demux);
    const big = frame(1, 'x'.repeat(64 * 1024));
    for (let i = 0; i < 100; i++) source.write(big);
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
    // Taken in: one frame, past the demultiplexer's 16 KiB marks already; the other 99 wait in
    // the source, whose writer is told to stop (dockerode's demuxStream would take all 100).
    assert.equal(demux.received, big.length);
    assert.equal(source.writableNeedDrain, true);
  });
});
