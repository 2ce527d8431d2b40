/**
 * How long the sandbox waits for the engine. One place for the numbers and the typed error, so a
 * busy engine (many clients at once, a slow or loaded machine, Podman answering one request at a
 * time) is told apart from one that is not there (errors.ts).
 */

/**
 * Management calls (version, info, create, start, inspect, exec) answer in well under a second on
 * an idle engine. Measured on a 2-core VM: ten CLI processes asking a Podman 4.3.1 service at once
 * waited more than 10 s for `info` and `version`, and under a load of 10 longer still. A call that
 * waits in line behind a busy engine keeps waiting this long; only then is the engine said not to
 * answer. Long enough for a busy engine, short enough that a hung one does not hold a chat for
 * longer than a program's default time limit.
 */
export const ENGINE_DEADLINE_MS = 90_000;

/** The engine took longer than `ms` to answer `what` (it was reached: a busy or hung engine, not a missing one). */
export class EngineTimeoutError extends Error {
  /** Kept for code that reads error codes (the log's describeError shows it). */
  readonly code = 'DEADLINE';
  constructor(
    /** What the engine was asked, in a few words ("engine version", "create container"). */
    readonly what: string,
    readonly ms: number,
  ) {
    super(`${what} did not answer within ${ms} ms`);
    this.name = 'EngineTimeoutError';
  }
}

/** True when `e` or one of its causes is an EngineTimeoutError. */
export function engineTimeoutOf(e: unknown): EngineTimeoutError | undefined {
  let current: unknown = e;
  for (let i = 0; i < 5 && current !== null && typeof current === 'object'; i++) {
    if (current instanceof EngineTimeoutError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Rejects with an EngineTimeoutError when `promise` takes longer than `ms` (a hung engine must not hang the chat). */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new EngineTimeoutError(what, ms)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Failures worth one more try of a read-only call: the connection dropped, or the engine hiccuped (5xx). */
function transient(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED') return true;
  const status = (e as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' && status >= 500;
}

/**
 * A read-only engine call (version, info, inspect, list) with the engine deadline, tried once more
 * when the first try failed in a way a second may not (a dropped connection, a 5xx). A timeout is
 * not retried: the call already waited its whole deadline.
 */
export async function readEngine<T>(ask: () => Promise<T>, what: string, ms = ENGINE_DEADLINE_MS): Promise<T> {
  const giveUp = Date.now() + ms;
  try {
    return await withDeadline(ask(), ms, what);
  } catch (e) {
    if (!transient(e) || Date.now() >= giveUp) throw e;
    return withDeadline(ask(), Math.max(1, giveUp - Date.now()), what);
  }
}
