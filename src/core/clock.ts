/**
 * The time and the timers, behind one seam: the deadlines that race with a sandbox's replies (the
 * runner channel's) and the provider's idle sweep read them here, so unit tests can drive them
 * with a clock they advance themselves instead of waiting for real seconds.
 */

/** A pending timer; `unref` lets the process exit while it waits (not every timer wants that). */
export interface Timer {
  unref(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(fire: () => void, ms: number): Timer;
  clearTimeout(timer: Timer | undefined): void;
  setInterval(fire: () => void, ms: number): Timer;
  clearInterval(timer: Timer | undefined): void;
}

/** Node's own timers and Date.now(). */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fire, ms) => setTimeout(fire, ms),
  // The only timers handed out here are Node's, so the handle is one.
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
  setInterval: (fire, ms) => setInterval(fire, ms),
  clearInterval: (timer) => clearInterval(timer as NodeJS.Timeout | undefined),
};
