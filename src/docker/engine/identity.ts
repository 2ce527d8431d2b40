import type Dockerode from 'dockerode';
import { z } from 'zod';
import { readEngine } from './deadline';

/**
 * The engines whose Docker-compatible API the sandbox speaks. Podman answers the same calls but
 * differs in a few places the sandbox depends on (podman.ts, engine/podmanHost.ts); the
 * difference is read from the engine, never configured.
 */
export type EngineKind = 'docker' | 'podman';

export interface EngineIdentity {
  kind: EngineKind;
  /** The engine's own version ("20.10.24+dfsg1", "4.3.1"). */
  version: string;
  /** For the log and the status bar: "Docker 20.10.24+dfsg1", "Podman 4.3.1". */
  label: string;
}

/** GET /version, tolerant: only what identifies the engine is read. */
const versionInfo = z
  .object({
    Version: z.string().optional(),
    Platform: z.object({ Name: z.string().optional() }).passthrough().optional(),
    Components: z.array(z.object({ Name: z.string(), Version: z.string().optional() }).passthrough()).nullish(),
  })
  .passthrough();

/**
 * Which engine answered `docker.version()`. Podman names its component "Podman Engine" (Docker's
 * is "Engine"); Podman Desktop and `podman machine` forward the same service, so they answer the
 * same way. Anything unrecognised is treated as Docker, the API's reference.
 */
export function identifyEngine(version: unknown): EngineIdentity {
  const parsed = versionInfo.safeParse(version);
  const info = parsed.success ? parsed.data : {};
  const podman = info.Components?.find((c) => /^podman\b/i.test(c.Name));
  if (podman) {
    const v = podman.Version ?? info.Version ?? 'unknown';
    return { kind: 'podman', version: v, label: `Podman ${v}` };
  }
  const v = info.Version ?? 'unknown';
  return { kind: 'docker', version: v, label: `Docker ${v}` };
}

const cache = new WeakMap<Dockerode, Promise<EngineIdentity>>();
const known = new WeakMap<Dockerode, EngineIdentity>();

/**
 * The engine behind a client, asked once per client (one per process and engine; a new connection
 * asks again) and shared by every concurrent caller: ten calls starting at once ask once.
 */
export function engineIdentity(docker: Dockerode): Promise<EngineIdentity> {
  let pending = cache.get(docker);
  if (!pending) {
    pending = readEngine(() => docker.version() as Promise<unknown>, 'its version').then(identifyEngine);
    pending.then(
      (identity) => known.set(docker, identity),
      () => cache.delete(docker),
    );
    cache.set(docker, pending);
  }
  return pending;
}

/** The identity this client's engine already gave, without asking (for error sentences). */
export function knownIdentity(docker: Dockerode): EngineIdentity | undefined {
  return known.get(docker);
}
