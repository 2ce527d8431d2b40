/**
 * What a person is told about the engine before any chat fails: it answers, nothing answers at
 * its address, this user may not use it (a Linux user outside the docker group), or no engine is
 * installed here at all. Classified from the failure's error codes; pure.
 */
import type Dockerode from 'dockerode';
import { isEngineFailure, withDeadline } from './errors';

export type EngineState = 'ok' | 'unreachable' | 'denied' | 'none';

const DENIED = new Set(['EACCES', 'EPERM']);

function codes(e: unknown): string[] {
  const out: string[] = [];
  let current: unknown = e;
  for (let i = 0; i < 5 && current !== null && typeof current === 'object'; i++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') out.push(code);
    current = (current as { cause?: unknown }).cause;
  }
  return out;
}

/** Whether the failure is the socket refusing this user (permission denied). */
export function isPermissionDenied(e: unknown): boolean {
  return codes(e).some((c) => DENIED.has(c));
}

/**
 * The engine's state after `e` (undefined: `e` is not an engine failure, so it says nothing about
 * the engine). `local`: the engine is this machine's socket; `cliFound`: a docker or podman
 * command is installed here. A missing local socket with neither command is no engine at all.
 */
export function engineStateOf(e: unknown, o: { local: boolean; cliFound: boolean }): Exclude<EngineState, 'ok'> | undefined {
  const all = codes(e);
  if (all.some((c) => DENIED.has(c))) return 'denied';
  if (all.includes('ENOENT') && o.local && !o.cliFound) return 'none';
  if (all.includes('ENOENT') || isEngineFailure(e) || all.some((c) => c === 'engine_unreachable' || c === 'engine_busy')) return 'unreachable';
  return undefined;
}

/** How long a check of the engine waits for its answer: a person pressed Retry, or the window opened. */
const ENGINE_CHECK_MS = 10_000;

/** Asks the engine whether it answers (its ping): resolves, or rejects with what went wrong. */
export async function pingEngine(docker: Dockerode): Promise<void> {
  await withDeadline(docker.ping(), ENGINE_CHECK_MS, 'a ping');
}
