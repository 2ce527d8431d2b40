import { describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { NORMAL_CPU_SHARES } from '../container';

/** While a call runs past LONG_CALL_MS: an eighth of a quick call's share of a busy machine. */
export const LONG_CALL_CPU_SHARES = 128;
/**
 * When a call counts as long. Quick calls (a print, a small DataFrame) end well before it on a
 * slow machine; a computation that goes on past it yields the cores to them. With five chats, one
 * call in flight each and a memory hog among them, a quick call's median went from 127-162 ms to
 * 57-64, its p95 from 261-267 to 152-161 (scripts/bench/load.ts, a 2-vCPU VM); the long calls
 * took as long as before, for they still had every core nobody else wanted.
 */
export const LONG_CALL_MS = 250;

/** The engine call that sets a sandbox's CPU shares (`docker update --cpu-shares`). */
export type SetShares = (shares: number) => Promise<void>;

export interface PriorityTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realTimers: PriorityTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * One sandbox's calls, each lowered to LONG_CALL_CPU_SHARES once it has run LONG_CALL_MS and set
 * back as it ends, before the sandbox's next call. The weight is the engine's to set: a program
 * cannot raise its own (no capability, the cgroup files read-only). An engine that refuses the
 * change (a Podman without `update`) is asked no more for this sandbox.
 */
export class CallPriority {
  private timer: unknown;
  /** The lowering, once asked for: a call's end waits for it before it sets the shares back. */
  private lowering: Promise<boolean> | undefined;
  private refused = false;

  constructor(
    private readonly setShares: SetShares,
    private readonly log: Logger,
    private readonly label: () => string,
    private readonly timers: PriorityTimers = realTimers,
  ) {}

  /** The call's program started: it is lowered if it is still running LONG_CALL_MS from now. */
  started(): void {
    if (this.refused || this.timer !== undefined || this.lowering) return;
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      this.lowering = this.set(LONG_CALL_CPU_SHARES);
    }, LONG_CALL_MS);
  }

  /** The call ended (however): its sandbox's shares are as they were before it once this resolves. */
  async ended(): Promise<void> {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    const lowering = this.lowering;
    this.lowering = undefined;
    if (lowering && (await lowering)) await this.set(NORMAL_CPU_SHARES);
  }

  private async set(shares: number): Promise<boolean> {
    if (this.refused) return false;
    try {
      await this.setShares(shares);
      return true;
    } catch (e) {
      this.refused = true;
      this.log.info(`sandbox ${this.label()}: its CPU share could not be set to ${shares} (${describeError(e)}); it is not changed for long calls any more`);
      return false;
    }
  }
}
