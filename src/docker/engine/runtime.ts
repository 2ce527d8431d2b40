import type Dockerode from 'dockerode';
import { ToolError } from '../../core/errors';
import { withDeadline } from '../engineErrors';

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
}

/**
 * Decides the runtime from the engine's list. `auto` takes gVisor where the engine lists it and
 * the engine's default otherwise; a named runtime the engine lacks is an error, never a silent
 * fall back to a weaker one.
 */
export function chooseRuntime(request: RuntimeRequest | undefined, available: readonly string[], engineDefault: string | undefined, settingHint: string): RuntimeChoice {
  const fallback = engineDefault ?? 'runc';
  if (request === undefined) return { runtime: undefined, name: fallback, reason: "the engine's default" };
  if (request === 'auto') {
    if (available.includes(GVISOR_RUNTIME)) return { runtime: GVISOR_RUNTIME, name: GVISOR_RUNTIME, reason: 'auto: the engine has gVisor' };
    return { runtime: undefined, name: fallback, reason: "auto: no gVisor on the engine, so its default" };
  }
  if (available.includes(request)) return { runtime: request, name: request, reason: `set by ${settingHint}` };
  throw new ToolError(
    'invalid_settings',
    `The Docker engine has no runtime named "${request}", so the program was not run. Ask the user to install and register it with the engine, or to set ${settingHint} to auto.`,
  );
}

export interface EngineRuntimes {
  available: string[];
  engineDefault: string | undefined;
}

const cache = new WeakMap<Dockerode, Promise<EngineRuntimes>>();

/** The runtimes the engine lists in its info (asked once per client: a new connection asks again). */
export function engineRuntimes(docker: Dockerode): Promise<EngineRuntimes> {
  let pending = cache.get(docker);
  if (!pending) {
    pending = withDeadline(docker.info() as Promise<{ Runtimes?: Record<string, unknown>; DefaultRuntime?: string }>, 10_000, 'engine info').then(
      (info) => ({ available: Object.keys(info.Runtimes ?? {}).sort(), engineDefault: info.DefaultRuntime || undefined }),
    );
    pending.catch(() => cache.delete(docker));
    cache.set(docker, pending);
  }
  return pending;
}
