// Two connected in-memory duplex streams, as a socket pair would be (node:stream's duplexPair is Node 22+).
import { Duplex } from 'node:stream';

class End extends Duplex {
  peer!: End;
  /** This end's readable side has had its EOF: nothing more arrives. */
  private eof = false;

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.peer.deliver(chunk);
    done();
  }

  /** Ending (or destroying) one end is the other's EOF, as closing a socket is. */
  override _final(done: (error?: Error | null) => void): void {
    this.peer.hangUp();
    done();
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.peer.hangUp();
    done(error);
  }

  private deliver(chunk: Buffer): void {
    if (!this.eof && !this.destroyed) this.push(chunk);
  }

  private hangUp(): void {
    if (this.eof || this.destroyed) return;
    this.eof = true;
    this.push(null);
  }
}

/** [a, b]: what is written to a is read from b, and the other way round. */
export function duplexPair(): [Duplex, Duplex] {
  const a = new End();
  const b = new End();
  a.peer = b;
  b.peer = a;
  return [a, b];
}
