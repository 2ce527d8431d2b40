/**
 * Whether a route can start: its base image is on the engine, or a pull brings it. A failed pull
 * is classified (see classifyPullFailure) so the log, and the sentences when no route can start,
 * say what was missing.
 */
import type Dockerode from 'dockerode';
import type { Logger } from '../../core/logger';
import { engineFailure, isEngineFailure } from '../engine';
import type { BuildProgressListener } from './buildProgress';
import { classifyPullFailure, imagePresent, pullImage, type PullFailure } from './pull';

export type RouteStart = { ok: true; how: 'present' | 'pulled' } | { ok: false; failure: Exclude<PullFailure, 'cancelled'>; detail: string };

/** Thrown when our signal stopped the pull. */
export class PullCancelled extends Error {
  constructor() {
    super('pull cancelled');
    this.name = 'PullCancelled';
  }
}

export async function probeBase(docker: Dockerode, base: string, o: { signal: AbortSignal; log: Logger; onProgress: BuildProgressListener }): Promise<RouteStart> {
  if (await imagePresent(docker, base)) return { ok: true, how: 'present' };
  o.onProgress({ phase: 'pulling-base', message: `Pulling ${base}` });
  try {
    await pullImage(docker, base, {
      signal: o.signal,
      onProgress: (message, fraction) => o.onProgress({ phase: 'pulling-base', message, ...(fraction !== undefined ? { fraction } : {}) }),
    });
    o.log.info(`pulled ${base}`);
    return { ok: true, how: 'pulled' };
  } catch (e) {
    const failure = classifyPullFailure(e, o.signal);
    if (failure === 'cancelled') throw new PullCancelled();
    // The engine itself gone (not a registry it could not reach: that is a 5xx answer).
    if (isEngineFailure(e) && (e as { statusCode?: unknown }).statusCode === undefined) throw engineFailure(e, docker);
    return { ok: false, failure, detail: (e as Error)?.message ?? String(e) };
  }
}

/** "debian:bookworm-slim is not on this engine and no image registry answered". */
export function startFailureText(base: string, failure: Exclude<PullFailure, 'cancelled'>): string {
  const why = {
    no_registry: 'no image registry answered',
    not_found: 'the registry has no such image',
    denied: 'the registry refused access to it',
    interrupted: 'its pull broke off',
  }[failure];
  return `${base} is not on this engine and ${why}`;
}
