import * as fs from 'node:fs';

/**
 * Keeps what a model can use of one output stream, whatever the program prints: the first and
 * the last `keepBytes` bytes and the total count. Memory is bounded by 2 × keepBytes per stream
 * however large the flood. The complete stream can be spilled to a file for the user (bounded
 * by `spillLimitBytes`), which the model never sees.
 */
export class StreamCapture {
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private total = 0;
  private spill: fs.WriteStream | undefined;
  private spilled = 0;

  constructor(
    private readonly keepBytes: number,
    private readonly spillPath?: string,
    private readonly spillLimitBytes = 64 * 1024 * 1024,
  ) {}

  get totalBytes(): number {
    return this.total;
  }

  write(chunk: Buffer): void {
    this.total += chunk.length;
    let rest = chunk;
    if (this.headBytes < this.keepBytes) {
      const take = rest.subarray(0, this.keepBytes - this.headBytes);
      this.head.push(take);
      this.headBytes += take.length;
      rest = rest.subarray(take.length);
    }
    if (rest.length === 0) return;
    // Only a stream too long for the model is worth a file; until then it is all in `head`.
    if (this.spillPath !== undefined) {
      if (!this.spill) {
        this.spill = fs.createWriteStream(this.spillPath);
        for (const part of this.head) this.toSpill(part);
      }
      this.toSpill(rest);
    }
    this.tail.push(rest);
    this.tailBytes += rest.length;
    while (this.tailBytes - this.tail[0]!.length >= this.keepBytes) {
      this.tailBytes -= this.tail.shift()!.length;
    }
  }

  private toSpill(chunk: Buffer): void {
    if (this.spilled >= this.spillLimitBytes) return;
    const part = chunk.subarray(0, this.spillLimitBytes - this.spilled);
    this.spill!.write(part);
    this.spilled += part.length;
  }

  /** Resolves once the spill file (if any) is flushed. */
  async close(): Promise<void> {
    const spill = this.spill;
    if (!spill) return;
    await new Promise<void>((resolve, reject) => spill.end((err?: Error | null) => (err ? reject(err) : resolve())));
  }

  /** Path of the full-stream file, when one was written. */
  get spillFile(): string | undefined {
    return this.spill ? this.spillPath : undefined;
  }

  snapshot(): CapturedStream {
    const head = Buffer.concat(this.head);
    const tailAll = Buffer.concat(this.tail);
    // Bytes that never reached head or tail were dropped in the middle.
    const tail = tailAll.subarray(Math.max(0, tailAll.length - this.keepBytes));
    return { head, tail, totalBytes: this.total };
  }
}

/**
 * What survives of a stream: `head` is its start, `tail` its end; when `head.length +
 * tail.length === totalBytes` nothing was dropped and `head + tail` is the whole stream.
 */
export interface CapturedStream {
  head: Buffer;
  tail: Buffer;
  totalBytes: number;
}

export function capturedFromString(text: string): CapturedStream {
  return { head: Buffer.from(text, 'utf8'), tail: Buffer.alloc(0), totalBytes: Buffer.byteLength(text, 'utf8') };
}
