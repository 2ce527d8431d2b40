// A clock the test moves (src/core/clock.ts): nothing fires until `advance` reaches it.
import type { Clock, Timer } from '../../../src/core/clock';

class FakeTimer implements Timer {
  constructor(
    public due: number,
    readonly seq: number,
    readonly fire: () => void,
    /** Set for an interval: it is due again this much later. */
    readonly every?: number,
  ) {}

  /** Nobody waits on this clock, so there is no process to keep alive. */
  unref(): void {}
}

/** Lets every promise, nextTick and stream callback queued so far run (and those they queue). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class FakeClock implements Clock {
  private time: number;
  private seq = 0;
  private readonly pending = new Set<FakeTimer>();

  constructor(start = 0) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fire: () => void, ms: number): Timer {
    return this.add(new FakeTimer(this.time + Math.max(0, ms), this.seq++, fire));
  }

  setInterval(fire: () => void, ms: number): Timer {
    const every = Math.max(1, ms);
    return this.add(new FakeTimer(this.time + every, this.seq++, fire, every));
  }

  clearTimeout(timer: Timer | undefined): void {
    if (timer instanceof FakeTimer) this.pending.delete(timer);
  }

  clearInterval(timer: Timer | undefined): void {
    if (timer instanceof FakeTimer) this.pending.delete(timer);
  }

  /** Timers not yet fired or cleared. */
  get timers(): number {
    return this.pending.size;
  }

  /**
   * Moves the time `ms` on, firing each timer due on the way at its own time, in order, and letting
   * what each one started settle before the next (as real time between them would).
   */
  async advance(ms: number): Promise<void> {
    const until = this.time + ms;
    await settle();
    for (;;) {
      const next = [...this.pending].filter((t) => t.due <= until).sort((a, b) => a.due - b.due || a.seq - b.seq)[0];
      if (!next) break;
      this.time = next.due;
      if (next.every === undefined) this.pending.delete(next);
      else next.due += next.every;
      next.fire();
      await settle();
    }
    this.time = until;
    await settle();
  }

  private add(timer: FakeTimer): Timer {
    this.pending.add(timer);
    return timer;
  }
}
