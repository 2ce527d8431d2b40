import { Transform, type TransformCallback } from 'node:stream';

/** The engine's frame header on an exec's output without a tty: kind (1 stdout, 2 stderr), 3 zero bytes, the length (u32 BE). */
const HEADER = 8;

/**
 * An exec's multiplexed output as a stream of its stdout, with the tail of its stderr kept aside.
 * Unlike dockerode's demuxStream it honours back-pressure: a slow reader of the stdout (a build
 * reading its context) holds the exec's output back instead of it piling up in memory.
 */
export class ExecStdout extends Transform {
  private pending: Buffer = Buffer.alloc(0);
  private err: Buffer = Buffer.alloc(0);
  /** Bytes of output taken in so far, both streams and their headers. */
  received = 0;

  constructor(private readonly stderrTail = 4096) {
    super();
  }

  /** The last `stderrTail` bytes the exec wrote to its stderr so far. */
  get stderr(): string {
    return this.err.toString('utf8');
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.received += chunk.length;
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    while (this.pending.length >= HEADER) {
      const size = this.pending.readUInt32BE(4);
      if (this.pending.length < HEADER + size) break;
      const kind = this.pending[0];
      const payload = this.pending.subarray(HEADER, HEADER + size);
      this.pending = this.pending.subarray(HEADER + size);
      if (kind === 1) this.push(payload);
      else if (kind === 2) {
        const both = Buffer.concat([this.err, payload]);
        this.err = both.subarray(Math.max(0, both.length - this.stderrTail));
      }
    }
    done();
  }

  override _flush(done: TransformCallback): void {
    done(this.pending.length ? new Error('the output of the exec ended within a frame') : null);
  }
}
