import type Dockerode from 'dockerode';
import { ToolError } from '../../core/errors';
import { readEngine } from './deadline';
import type { EngineKind } from './identity';

/** gVisor's OCI runtime: a user-space kernel between the program and the host's. */
export const GVISOR_RUNTIME = 'runsc';

/** True for gVisor: the runtime whose kernel differs from the host's (limits, /proc, signals to PID 1). */
export function isGvisor(runtime: string | undefined): boolean {
  return runtime === GVISOR_RUNTIME;
}

/** What the runtime setting asks for: `auto`, or the name of a runtime the engine must have. */
export type RuntimeRequest = 'auto' | (string & {});

export interface RuntimeChoice {
  /** The runtime to name in HostConfig.Runtime; undefined: the engine's default. */
  runtime: string | undefined;
  /** What the sandbox runs under, for the status bar, the log and the run record. */
  name: string;
  /** Why, in a few words ("auto: the engine has gVisor"). */
  reason: string;
  /** The engine that runs it: where Podman differs, the container is made its way (container/spec.ts). */
  engine: EngineKind;
}

/**
 * Decides the runtime from the engine's list. `auto` takes gVisor where the engine lists it and
 * the engine's default otherwise; a named runtime the engine lacks is an error, never a silent
 * fall back to a weaker one.
 */
export function chooseRuntime(
  request: RuntimeRequest | undefined,
  available: readonly string[],
  engineDefault: string | undefined,
  settingHint: string,
  engine: EngineKind = 'docker',
  /** The sandbox has a network allow-list: auto does not pick gVisor, whose own network stack the allow-list's tests do not cover. */
  withNetwork = false,
): RuntimeChoice {
  const fallback = engineDefault ?? 'runc';
  if (request === undefined) return { runtime: undefined, name: fallback, reason: "the engine's default", engine };
  if (request === 'auto') {
    // Podman lists every runtime its configuration names, installed or not (crun, kata, krun):
    // its list cannot say that gVisor is there, so auto keeps its default; runsc can be named.
    if (engine === 'podman') return { runtime: undefined, name: fallback, reason: 'auto: Podman does not say which runtimes are installed, so its default', engine };
    if (available.includes(GVISOR_RUNTIME) && withNetwork) {
      return { runtime: undefined, name: fallback, reason: "auto: gVisor is not used for a sandbox with a network allow-list, so the engine's default", engine };
    }
    if (available.includes(GVISOR_RUNTIME)) return { runtime: GVISOR_RUNTIME, name: GVISOR_RUNTIME, reason: 'auto: the engine has gVisor', engine };
    return { runtime: undefined, name: fallback, reason: "auto: no gVisor on the engine, so its default", engine };
  }
  if (available.includes(request)) {
    if (engine !== 'podman') return { runtime: request, name: request, reason: `set by ${settingHint}`, engine };
    if (request === fallback) return { runtime: undefined, name: request, reason: `set by ${settingHint}, Podman's default`, engine };
    // Podman's Docker API (4.x) takes HostConfig.Runtime without using it: the sandbox would run
    // under the default while saying otherwise.
    throw new ToolError(
      'invalid_settings',
      `Podman runs every container of its Docker API under its default runtime (${fallback}), so a sandbox cannot run under "${request}" and the program was not run. Ask the user to make ${request} Podman's default runtime (runtime = "${request}" in containers.conf), or to set ${settingHint} to auto.`,
    );
  }
  throw new ToolError(
    'invalid_settings',
    `The Docker engine has no runtime named "${request}", so the program was not run. Ask the user to install and register it with the engine, or to set ${settingHint} to auto.`,
  );
}

export interface EngineRuntimes {
  available: string[];
  engineDefault: string | undefined;
  /** Runtimes registered with `--network=none` (runsc on a VM that refuses its network): no sandbox network through them. */
  withoutNetwork: string[];
}

/** Whether a runtime's registered arguments take its network away (`--network=none`, `--network none`). */
export function argsWithoutNetwork(args: readonly unknown[]): boolean {
  return args.some((a, i) => a === '--network=none' || (a === '--network' && args[i + 1] === 'none'));
}

const cache = new WeakMap<Dockerode, Promise<EngineRuntimes>>();

/** The runtimes the engine lists in its info (asked once per client: a new connection asks again). */
export function engineRuntimes(docker: Dockerode): Promise<EngineRuntimes> {
  let pending = cache.get(docker);
  if (!pending) {
    pending = readEngine(() => docker.info() as Promise<{ Runtimes?: Record<string, unknown>; DefaultRuntime?: string }>, 'its runtimes (info)').then(
      (info) => ({
        available: Object.keys(info.Runtimes ?? {}).sort(),
        engineDefault: info.DefaultRuntime || undefined,
        withoutNetwork: Object.entries(info.Runtimes ?? {})
          .filter(([, r]) => argsWithoutNetwork(((r as { runtimeArgs?: unknown[] } | null)?.runtimeArgs ?? []) as unknown[]))
          .map(([name]) => name)
          .sort(),
      }),
    );
    pending.catch(() => cache.delete(docker));
    cache.set(docker, pending);
  }
  return pending;
}
