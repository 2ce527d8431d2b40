import type Dockerode from 'dockerode';
import { z } from 'zod';
import { withDeadline } from '../engineErrors';

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

/** The engine behind a client (asked once per client: a new connection asks again). */
export function engineIdentity(docker: Dockerode): Promise<EngineIdentity> {
  let pending = cache.get(docker);
  if (!pending) {
    pending = withDeadline(docker.version() as Promise<unknown>, 10_000, 'engine version').then(identifyEngine);
    pending.catch(() => cache.delete(docker));
    cache.set(docker, pending);
  }
  return pending;
}
