import type Dockerode from 'dockerode';
import { z } from 'zod';
import { ToolError, describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import type { EngineIdentity } from './identity';
import { readEngine } from './deadline';

/** What Podman says of its host that the Docker-compatible info leaves out (libpod's own /info). */
export interface PodmanHost {
  rootless: boolean;
  cgroupVersion: string;
  /** The cgroup controllers this service may use: rootless, only those delegated to the user. */
  controllers: string[];
  /** The OCI runtime its containers run under ("crun", "runc"), when it says. */
  ociRuntime?: string;
}

const libpodInfo = z
  .object({
    host: z
      .object({
        cgroupVersion: z.string().optional(),
        cgroupControllers: z.array(z.string()).nullish(),
        security: z.object({ rootless: z.boolean().optional() }).passthrough().optional(),
        ociRuntime: z.object({ name: z.string().optional() }).passthrough().nullish(),
      })
      .passthrough(),
  })
  .passthrough();

export function parsePodmanHost(info: unknown): PodmanHost | undefined {
  const parsed = libpodInfo.safeParse(info);
  if (!parsed.success) return undefined;
  const { host } = parsed.data;
  const ociRuntime = host.ociRuntime?.name;
  return {
    rootless: host.security?.rootless ?? false,
    cgroupVersion: host.cgroupVersion ?? 'unknown',
    controllers: host.cgroupControllers ?? [],
    ...(ociRuntime ? { ociRuntime } : {}),
  };
}

/** The sandbox's limits that rest on a cgroup controller, by the name the user knows them by. */
const LIMIT_CONTROLLERS: readonly (readonly [controller: string, limit: string])[] = [
  ['memory', 'memory'],
  ['cpu', 'CPU'],
  ['pids', 'processes'],
];

/** The limits this Podman cannot enforce: rootless Podman on cgroups v1, or on v2 without delegation, ignores them. */
export function missingLimits(host: PodmanHost): string[] {
  return LIMIT_CONTROLLERS.filter(([c]) => !host.controllers.includes(c)).map(([, limit]) => limit);
}

/**
 * Podman takes memory, CPU and pids limits it cannot enforce without an error (rootless on cgroups
 * v1: "Resource limits are not supported and ignored"), so a sandbox there would run unlimited
 * while saying otherwise. No sandbox is made on such an engine.
 */
export function unenforceableLimits(host: PodmanHost, missing: readonly string[]): ToolError {
  const how = host.rootless ? `rootless Podman on cgroups ${host.cgroupVersion}` : `Podman on cgroups ${host.cgroupVersion}`;
  return new ToolError(
    'sandbox_failed',
    `The sandbox was not created: ${how} cannot enforce its limits on ${missing.join(', ')} here, and it does not run without them. Ask the user to use rootful Podman or Docker, or to give rootless Podman those cgroup controllers (cgroups v2 with delegation).`,
  );
}

const cache = new WeakMap<Dockerode, Promise<PodmanHost | undefined>>();

/** libpod's info (any versioned path serves it); undefined where it cannot be read. */
export function podmanHost(docker: Dockerode): Promise<PodmanHost | undefined> {
  let pending = cache.get(docker);
  if (!pending) {
    const ask = () =>
      new Promise<unknown>((resolve, reject) =>
        docker.modem.dial({ path: '/v4.0.0/libpod/info', method: 'GET', statusCodes: { 200: true }, options: {} }, (err: unknown, data: unknown) => (err ? reject(err) : resolve(data))),
      );
    pending = readEngine(ask, 'its Podman host info').then(parsePodmanHost);
    pending.catch(() => cache.delete(docker));
    cache.set(docker, pending);
  }
  return pending;
}

/** A Podman that would ignore the sandbox's limits gets no sandbox; one whose info cannot be read is named in the log. */
export async function checkPodmanLimits(docker: Dockerode, engine: EngineIdentity, log: Logger): Promise<PodmanHost | undefined> {
  const host = await podmanHost(docker).catch((e: unknown) => {
    log.warn(`${engine.label}: its own info could not be read (${describeError(e)}); its cgroup controllers are not checked`);
    return undefined;
  });
  const missing = host ? missingLimits(host) : [];
  if (!host || !missing.length) return host;
  const error = unenforceableLimits(host, missing);
  log.error(`${engine.label}${host.rootless ? ' (rootless)' : ''}, cgroups ${host.cgroupVersion}, controllers [${host.controllers.join(', ')}]: ${error.modelMessage}`);
  throw error;
}
