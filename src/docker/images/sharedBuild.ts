/**
 * One build per image and engine, however many callers want it at once: the first starts it,
 * later ones wait for the same promise and see its progress. Waiting and building are cancelled
 * separately: a caller's `signal` ends only its own wait (a chat's Stop), a `buildSignal` (a
 * progress notification's Cancel) stops the build for everyone; a caller that passes no
 * buildSignal lets its signal do both. A deadline stops the build too.
 */
import type Dockerode from 'dockerode';
import type { BuildProgress, BuildProgressListener } from './buildProgress';

export type StopReason = 'cancelled' | 'timeout';

export interface ShareOptions {
  signal?: AbortSignal;
  buildSignal?: AbortSignal;
  onProgress?: BuildProgressListener;
  timeoutMs: number;
}

interface Entry {
  promise: Promise<unknown>;
  controller: AbortController;
  listeners: Set<BuildProgressListener>;
  last?: BuildProgress;
  stopped?: StopReason;
}

const running = new WeakMap<Dockerode, Map<string, Entry>>();

/** True while a build of `key` runs on this engine (in this process). */
export function buildRunning(docker: Dockerode, key: string): boolean {
  return running.get(docker)?.has(key) ?? false;
}

/**
 * Joins the build of `key` or starts it with `start(signal, emit, stopped)`, where `stopped()`
 * says why `signal` fired. Rejects with `waitCancelled()` when the caller's own wait is cancelled.
 */
export function shareBuild<T>(
  docker: Dockerode,
  key: string,
  o: ShareOptions,
  start: (signal: AbortSignal, emit: BuildProgressListener, stopped: () => StopReason | undefined) => Promise<T>,
  waitCancelled: () => Error,
): Promise<T> {
  let perEngine = running.get(docker);
  if (!perEngine) running.set(docker, (perEngine = new Map()));
  let entry = perEngine.get(key);
  if (!entry) {
    const controller = new AbortController();
    const created: Entry = { promise: Promise.resolve(), controller, listeners: new Set() };
    const emit: BuildProgressListener = (p) => {
      created.last = p;
      for (const l of created.listeners) l(p);
    };
    const timer = setTimeout(() => {
      created.stopped ??= 'timeout';
      controller.abort();
    }, o.timeoutMs);
    const map = perEngine;
    created.promise = Promise.resolve()
      .then(() => start(controller.signal, emit, () => created.stopped))
      .finally(() => {
        clearTimeout(timer);
        if (map.get(key) === created) map.delete(key);
      });
    // A build nobody waits for any more still settles quietly.
    created.promise.catch(() => {});
    perEngine.set(key, created);
    entry = created;
  }
  return join(entry, o, waitCancelled) as Promise<T>;
}

function join(entry: Entry, o: ShareOptions, waitCancelled: () => Error): Promise<unknown> {
  const buildSignal = o.buildSignal ?? o.signal;
  const stopBuild = () => {
    entry.stopped ??= 'cancelled';
    entry.controller.abort();
  };
  if (o.onProgress) {
    entry.listeners.add(o.onProgress);
    if (entry.last) o.onProgress(entry.last);
  }
  if (buildSignal?.aborted) stopBuild();
  buildSignal?.addEventListener('abort', stopBuild, { once: true });
  return new Promise((resolve, reject) => {
    const onWaitAbort = () => reject(waitCancelled());
    if (o.signal && o.signal !== buildSignal) {
      if (o.signal.aborted) onWaitAbort();
      o.signal.addEventListener('abort', onWaitAbort, { once: true });
    }
    entry.promise.then(resolve, reject).finally(() => {
      o.signal?.removeEventListener('abort', onWaitAbort);
      buildSignal?.removeEventListener('abort', stopBuild);
      if (o.onProgress) entry.listeners.delete(o.onProgress);
    });
  });
}
