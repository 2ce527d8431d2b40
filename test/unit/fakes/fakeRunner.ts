// The runner's end of a channel (resources/runner.py as the host sees it), in memory: it records the
// frames the host writes and answers them as the test tells it.
import { PassThrough, type Duplex } from 'node:stream';
import { FRAME_HEADER_BYTES, FRAME_MAGIC } from '../../../src/core/runnerProtocol';
import type { ChannelOptions } from '../../../src/docker/run/runnerChannel';
import { duplexPair } from './duplexPair';

export interface HostFrame {
  kind: string;
  id: number;
  payload: Buffer;
  /** The frame as written, header included. */
  bytes: Buffer;
}

type Answer = (frame: HostFrame) => Buffer[];

export class FakeRunner {
  /** The host's end: what `RunnerChannel.over` is given. */
  readonly stream: Duplex;
  /** The runner's own stderr (its log lines), apart from the frames as on an attach stream. */
  readonly stderr = new PassThrough();
  /** Every frame the host wrote, in order. */
  readonly received: HostFrame[] = [];
  private readonly end: Duplex;
  private readonly answers = new Map<string, Answer>();
  private pending = Buffer.alloc(0);

  constructor() {
    [this.stream, this.end] = duplexPair();
    this.end.on('data', (chunk: Buffer) => this.read(chunk));
    // A host that detaches hangs up its end; ours closes with it.
    this.end.on('end', () => this.end.end());
  }

  /** Splits the host's stream into frames (here) and stderr lines (from `stderr`), as the engine's demux does. */
  readonly demux: NonNullable<ChannelOptions['demux']> = (stdout, stderr) => {
    this.stream.on('data', stdout);
    this.stderr.on('data', stderr);
  };

  /** From now on, frames of `kind` ('h', 'r', 'k') are answered with these bytes. */
  answer(kind: string, reply: Answer): void {
    this.answers.set(kind, reply);
  }

  /** Stops answering frames of `kind` (a runner gone silent). */
  silence(kind: string): void {
    this.answers.delete(kind);
  }

  /** Writes bytes to the host, as the runner's stdout. */
  send(...frames: Buffer[]): void {
    for (const f of frames) this.end.write(f);
  }

  /** The runner's stdout closes (its container stopped, the connection dropped). */
  hangUp(): void {
    this.end.end();
  }

  /** The kinds and ids of the frames received, e.g. ['h0', 'r7', 'k7']. */
  get kinds(): string[] {
    return this.received.map((f) => `${f.kind}${f.id}`);
  }

  private read(chunk: Buffer): void {
    this.pending = Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= FRAME_HEADER_BYTES) {
      if (!this.pending.subarray(0, 2).equals(FRAME_MAGIC)) throw new Error(`the host wrote something that is not a frame: ${this.pending.toString('hex')}`);
      const length = this.pending.readUInt32BE(8);
      if (this.pending.length < FRAME_HEADER_BYTES + length) return;
      const bytes = this.pending.subarray(0, FRAME_HEADER_BYTES + length);
      this.pending = this.pending.subarray(bytes.length);
      const frame = { kind: String.fromCharCode(bytes[2]!), id: bytes.readUInt32BE(4), payload: bytes.subarray(FRAME_HEADER_BYTES), bytes };
      this.received.push(frame);
      const reply = this.answers.get(frame.kind);
      if (reply) this.send(...reply(frame));
    }
  }
}
