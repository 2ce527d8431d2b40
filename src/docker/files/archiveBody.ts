import { Readable, type Writable } from 'node:stream';

/**
 * A few buffers a large file is read through, each used again once the engine's connection has
 * taken its bytes. A file stream hands over a fresh buffer per chunk, and fresh memory costs a
 * page fault per 4 KB when first written: 100 MB shared took 10,000-16,000 faults and 340-490 ms
 * of CPU in this process (15-25 µs a fault on a new VM), against 1,400-2,200 faults and 80-130 ms
 * through four 1 MiB buffers, and the copy went from slower than `docker cp` to faster
 * (scripts/bench.ts, "share").
 */
export class ChunkRing {
  private readonly free: Buffer[] = [];
  private readonly owned = new Set<ArrayBufferLike>();
  private readonly waiting: { resume(): void; fail(e: Error): void }[] = [];
  private closed: Error | undefined;

  constructor(
    readonly chunkBytes: number,
    private readonly most: number,
  ) {}

  /** A buffer to read into: a free one, a new one while fewer than `most` exist, else the next one given back. */
  async take(): Promise<Buffer> {
    for (;;) {
      if (this.closed) throw this.closed;
      const free = this.free.pop();
      if (free) return free;
      if (this.owned.size < this.most) {
        // Its own memory (not Node's shared pool), so a chunk's ArrayBuffer says which buffer it is.
        const fresh = Buffer.allocUnsafeSlow(this.chunkBytes);
        this.owned.add(fresh.buffer);
        return fresh;
      }
      await new Promise<void>((resume, fail) => this.waiting.push({ resume, fail }));
    }
  }

  /** Gives back the buffer under `chunk` once nothing holds the chunk; a chunk of other memory (a tar header) is not the ring's. */
  give(chunk: Uint8Array): void {
    if (!this.owned.has(chunk.buffer)) return;
    this.free.push(Buffer.from(chunk.buffer, 0, this.chunkBytes));
    this.waiting.shift()?.resume();
  }

  /** Whoever waits for a buffer, or asks for one later, gets `why`. */
  close(why: Error): void {
    this.closed ??= why;
    for (const w of this.waiting.splice(0)) w.fail(why);
  }
}

/**
 * An archive's bytes for the engine, whose chunks may sit in a ring's buffers. Piped (the engine
 * client pipes a request body), each chunk goes to the connection with a callback, and its buffer
 * is given back only when the connection says the chunk is written, never sooner. Read as a
 * plain stream, each chunk is copied out first, so no reader can see a buffer used again.
 */
export class ArchiveBody extends Readable {
  private readonly chunks: AsyncIterator<Buffer>;
  private piped = false;
  /** The connection it is sent on, until the whole archive is written to it. */
  private sending: Writable | undefined;

  constructor(
    archive: AsyncIterable<Buffer>,
    private readonly ring: ChunkRing,
    private readonly stop: (why: Error) => void,
  ) {
    super();
    this.chunks = archive[Symbol.asyncIterator]();
  }

  override _read(): void {
    this.chunks.next().then(
      ({ value, done }) => {
        if (done) {
          this.push(null);
          return;
        }
        const copy = Buffer.from(value);
        this.ring.give(value);
        this.push(copy);
      },
      (e: unknown) => this.destroy(e instanceof Error ? e : new Error(String(e))),
    );
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T, _options?: { end?: boolean }): T {
    if (this.piped) throw new Error('an archive body is sent once');
    this.piped = true;
    void this.send(destination as unknown as Writable);
    return destination;
  }

  private async send(to: Writable): Promise<void> {
    const gone = () => this.destroy(new Error('the engine closed the connection before the archive was sent'));
    this.sending = to;
    to.once('close', gone);
    try {
      for (;;) {
        const { value, done } = await this.chunks.next();
        if (done) break;
        if (to.destroyed) return;
        // A failed write is not given back: the connection may still hold it, and the send ends.
        const more = to.write(value, (e) => {
          if (!e) this.ring.give(value);
        });
        if (!more) await drained(to);
      }
      this.sending = undefined;
      to.end();
      to.off('close', gone);
    } catch (e) {
      this.destroy(e instanceof Error ? e : new Error(String(e)));
    }
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const why = error ?? new Error('the archive was not sent');
    this.ring.close(why);
    this.stop(why);
    // Half an archive: the request goes too, and with it what it still holds of the ring.
    this.sending?.destroy(why);
    this.sending = undefined;
    callback(error);
  }
}

/** Resolves when `to` takes writes again, or is closed (the caller looks which). */
function drained(to: Writable): Promise<void> {
  return new Promise((resume) => {
    const done = () => {
      to.off('drain', done);
      to.off('close', done);
      resume();
    };
    to.on('drain', done);
    to.on('close', done);
  });
}
