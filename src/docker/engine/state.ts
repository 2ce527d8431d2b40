/**
 * What a person is told about the engine before any chat fails: it answers, nothing answers at
 * its address, this user may not use it (a Linux user outside the docker group), or no engine is
 * installed here at all. Classified from the failure's error codes; pure.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import type Dockerode from 'dockerode';
import { createDockerClient } from './connection';
import { isEngineFailure, withDeadline } from './errors';
import { engineIdentity, type EngineIdentity } from './identity';
import { podmanCandidates, type PodmanCandidate } from './podmanSockets';
import { resolveEngine } from './resolve';

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

/** Asks the engine whether it answers and what it is (its ping's headers), within the check's time. */
export function checkEngineIdentity(docker: Dockerode): Promise<EngineIdentity> {
  return withDeadline(engineIdentity(docker), ENGINE_CHECK_MS, 'a ping');
}

/** A Podman service that answered where Podman's own tools look. */
export interface PodmanFound {
  candidate: PodmanCandidate;
  identity: EngineIdentity;
}

/** How long one Podman candidate may take to answer: a socket that exists answers at once or is stale. */
const PODMAN_PROBE_MS = 3_000;

/**
 * The first Podman service that answers where Podman's own tools look (podmanSockets.ts), for the
 * person whose Docker does not answer. A socket file that does not exist is not dialled; one that
 * answers as Docker (Podman Desktop's Docker compatibility forwards the same service, but a
 * Docker engine at CONTAINER_HOST is not Podman) is not offered as Podman.
 */
export async function findPodman(
  o: { env?: NodeJS.ProcessEnv; platform?: NodeJS.Platform; home?: string; uid?: number; exists?: (file: string) => boolean } = {},
): Promise<PodmanFound | undefined> {
  const env = o.env ?? process.env;
  const platform = o.platform ?? process.platform;
  const home = o.home ?? (env.HOME || env.USERPROFILE || os.homedir());
  const exists = o.exists ?? ((file: string) => fs.existsSync(file));
  for (const candidate of podmanCandidates(env, platform, home, o.uid)) {
    if (candidate.address.startsWith('unix://') && !exists(candidate.address.slice('unix://'.length))) continue;
    try {
      const docker = createDockerClient(resolveEngine({ host: candidate.address }, {}, platform), { env });
      const identity = await withDeadline(engineIdentity(docker), PODMAN_PROBE_MS, 'a ping');
      if (identity.kind === 'podman') return { candidate, identity };
    } catch {
      // Not answering there: the next place.
    }
  }
  return undefined;
}
