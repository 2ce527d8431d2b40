import type Dockerode from 'dockerode';
import { DEFAULTS, type SandboxLimits } from '../../core/limits';
import type { PreloadWhen } from '../../core/runnerProtocol';
import { policyDigest, type NetworkPolicy } from '../../core/network';
import type { SandboxCredentials } from '../../core/credentials';
import type { Logger } from '../../core/logger';
import { describeError } from '../../core/errors';
import { isGvisor, statusCode, withDeadline, type EngineKind, type RuntimeChoice, type RuntimeRequest } from '../engine';
import { LABEL } from './labels';
import { KEEPER_SOURCE, SANDBOX_GID, SANDBOX_UID, SANDBOX_USER, WORK_ROOT, sandboxEnv } from './guest';
import { commandWithoutAhead, runnerCommand } from './runnerProgram';
import { PODMAN_RLIMITS, podmanTmpfsCovers, podmanWorkAreaMountOptions, reportedImageMatches } from './podmanSpec';

export interface SandboxSpec {
  image: string;
  limits: SandboxLimits;
  /** PID 1 is the warm runner and programs are forked from it (default true); false: `docker exec` only. */
  warmRunner?: boolean;
  /** Modules the runner preloads (those the image lacks are skipped). */
  preloadModules?: readonly string[];
  /** When: once a program of the sandbox imported them (`used`, the default), or at its start. */
  preloadWhen?: PreloadWhen;
  /**
   * With `used`: modules of the list preloaded at the start all the same, because programs of
   * this window's chats imported them (spares and sandboxes made ahead of a chat's first call).
   * A hint of the provider's, not a setting: not part of `specKey`, so a sandbox made with
   * another hint still serves the session.
   */
  preloadAhead?: readonly string[];
  /** `auto` (gVisor where the engine has it), a runtime the engine must have, or unset: the engine's default. */
  runtime?: RuntimeRequest;
  /**
   * How the user adds packages to this image ("codeactSandbox.pythonPackages", "--packages"), for
   * the missing-module hint; only for the data image, whose packages the host can add to.
   */
  packagesSetting?: string;
  /** Names the sandbox may reach through the proxy; unset: no network at all. */
  network?: SandboxNetwork;
}

/**
 * Tests only: where the proxy's "internet" is. The test servers' network (the proxy joins it
 * instead of the engine's default one), the private addresses on it the proxy may reach, and the
 * names only this proxy resolves to them. Never set by the extension, the CLI or the MCP server.
 */
export interface ProxyTesting {
  egressNetwork: string;
  reachable: readonly string[];
  hosts: Readonly<Record<string, string>>;
  /** The test CA the credential forwarder trusts beside the system's store (the test servers' certificates). */
  upstreamCa?: string;
}

export interface SandboxNetwork {
  policy: NetworkPolicy;
  testing?: ProxyTesting;
  /**
   * Credentials the proxy adds for bound hosts (only on hosts the policy lets programs reach).
   * Such a sandbox has a proxy of its own on every engine (sidecar.ts): its CA is its alone.
   */
  credentials?: SandboxCredentials;
}

/**
 * A network as its key and digest see it: the credentials by their bindings, stand-ins and
 * generation, never through anything that could hold a value.
 */
export function networkKey(network: SandboxNetwork): string {
  const c = network.credentials;
  return JSON.stringify([network.policy, network.testing ?? null, c ? [c.bindings, c.standIns, c.values.generation] : null]);
}

/** The digest that names a network's internal network and proxy, and labels its sandboxes. */
export function networkDigest(network: SandboxNetwork): string {
  if (!network.credentials) return policyDigest(network.policy, network.testing ? JSON.stringify(network.testing) : '');
  return policyDigest(network.policy, networkKey(network));
}

/**
 * What a sandbox with a network joins, and the proxy variables its programs get: the internal
 * network (Docker), or its own proxy's namespace (`container:<id>`, Podman), whose DNS and
 * sysctls are the proxy's.
 */
export interface SandboxEgress {
  network: string;
  env: readonly string[];
  joinsProxy?: boolean;
}

/**
 * The settings that make two sandboxes interchangeable, as one string: a session's sandbox is kept
 * while its key is unchanged (sameSpec), and spares are pooled by it (the pool's digest). Every
 * field of SandboxSpec is here; a new field is either added here or said above not to matter.
 * (containerMatches asks another question: whether a container the engine holds, perhaps made by
 * another process, has the limits and command this spec gives, read back from the engine.)
 */
export function specKey(spec: SandboxSpec): string {
  return JSON.stringify([
    spec.image,
    spec.limits,
    spec.warmRunner !== false,
    spec.preloadModules ?? null,
    spec.preloadWhen ?? DEFAULTS.preloadWhen,
    spec.runtime ?? null,
    spec.packagesSetting ?? null,
    // With credentials, by networkKey alone: nothing that could hold a value is ever stringified.
    spec.network?.credentials ? networkKey(spec.network) : (spec.network ?? null),
  ]);
}

/** Whether a sandbox made for `a` serves `b`. */
export function sameSpec(a: SandboxSpec, b: SandboxSpec): boolean {
  return specKey(a) === specKey(b);
}

/** The container's command: the warm runner, or the plain keeper. */
export function commandOf(spec: SandboxSpec): string[] {
  return spec.warmRunner === false ? ['python3', '-c', KEEPER_SOURCE] : runnerCommand(spec.preloadModules ?? DEFAULTS.preloadModules, spec.preloadWhen ?? DEFAULTS.preloadWhen, spec.preloadAhead);
}

/**
 * The container's hardening, in one place so every backend and every test sees the same thing.
 * `imageVolumes` are the VOLUME paths the image declares (Dev Container images may): Docker would
 * give each a writable anonymous volume on the host's disk, outside the size-bounded work area,
 * so each is covered by an empty read-only tmpfs instead.
 */
export function hardenedHostConfig(
  volumeName: string,
  limits: SandboxLimits,
  imageVolumes: readonly string[] = [],
  runtime: string | undefined = undefined,
  engine: EngineKind = 'docker',
): Dockerode.HostConfig {
  const processes = processLimits(limits, runtime);
  const podman = engine === 'podman';
  return {
    NetworkMode: 'none',
    ReadonlyRootfs: true,
    CapDrop: ['ALL'],
    SecurityOpt: ['no-new-privileges'],
    Memory: limits.memoryMb * 1024 * 1024,
    // Equal to Memory: no swap, so the memory limit is the limit.
    MemorySwap: limits.memoryMb * 1024 * 1024,
    NanoCpus: Math.round(limits.cpus * 1e9),
    PidsLimit: processes.hostPids,
    // The work area is a size-bounded tmpfs volume owned by the sandbox user: no host path is mounted.
    Mounts: [
      { Type: 'volume', Source: volumeName, Target: WORK_ROOT, ReadOnly: false },
      ...(podman ? [] : imageVolumes.map((Target) => ({ Type: 'tmpfs' as const, Source: '', Target, ReadOnly: true, TmpfsOptions: { SizeBytes: 1024 * 1024, Mode: 0o755 } }))),
    ],
    ...(podman ? podmanTmpfsCovers(imageVolumes) : {}),
    IpcMode: 'private',
    ShmSize: 64 * 1024 * 1024,
    Ulimits: [{ Name: 'core', Soft: 0, Hard: 0 }, ...(podman ? podmanRlimits(processes.ulimits) : processes.ulimits)],
    RestartPolicy: { Name: 'no' },
    AutoRemove: false,
    // Our runner is PID 1 whatever the engine's default (a daemon's "init": true would put its
    // init there): it reaps, cannot be signalled from inside, and a chat's prepared packages are
    // kept from it by its PID (chatImage.ts).
    Init: false,
  };
}

/**
 * Host threads gVisor's own kernel may use. Under runsc the pids cgroup counts the sentry's and
 * the gofer's host threads, not the sandbox's processes: about 40 at rest, over 1,500 during a
 * fork bomb of 32 processes. A pids limit of the process count would keep the sandbox from
 * starting (32) or make gVisor itself die mid-run; this stays a backstop for the host.
 */
export const GVISOR_HOST_PIDS = 4096;

/**
 * How the process limit is enforced. runc: the container's pids cgroup. gVisor: its own kernel
 * counts the sandbox's processes against RLIMIT_NPROC (the sandbox is its own user namespace, so
 * no host process of the same uid counts), and the cgroup only bounds gVisor's host threads.
 */
export function processLimits(limits: SandboxLimits, runtime: string | undefined): { hostPids: number; ulimits: { Name: string; Soft: number; Hard: number }[] } {
  if (!isGvisor(runtime)) return { hostPids: limits.pidsLimit, ulimits: [] };
  return { hostPids: Math.max(GVISOR_HOST_PIDS, limits.pidsLimit), ulimits: [{ Name: 'nproc', Soft: limits.pidsLimit, Hard: limits.pidsLimit }] };
}

/** Podman's explicit rlimits, where gVisor's nproc (the process limit itself) takes precedence. */
function podmanRlimits(ulimits: { Name: string; Soft: number; Hard: number }[]): { Name: string; Soft: number; Hard: number }[] {
  return [...PODMAN_RLIMITS.filter((r) => !ulimits.some((u) => u.Name === r.Name)), ...ulimits];
}

/**
 * gVisor mounts a writable tmpfs of its own at /tmp when the spec has none, whatever the read-only
 * root says: covered by the same empty read-only tmpfs as an image's VOLUME paths, /tmp stays as
 * read-only as the rest of the root (the work area, TMPDIR included, is /sandbox).
 */
function withGvisorTmp(imageVolumes: readonly string[]): string[] {
  return [...new Set([...imageVolumes, '/tmp'])].sort();
}

/** The work area: a size-bounded tmpfs volume owned by the sandbox user (no host path). */
export function workAreaVolumeOptions(name: string, limits: SandboxLimits, labels: Record<string, string>, engine: EngineKind = 'docker'): Dockerode.VolumeCreateOptions {
  const o = engine === 'podman' ? podmanWorkAreaMountOptions(limits, SANDBOX_UID, SANDBOX_GID) : `size=${limits.workAreaMb}m,uid=${SANDBOX_UID},gid=${SANDBOX_GID},mode=0700`;
  return {
    Name: name,
    Driver: 'local',
    DriverOpts: { type: 'tmpfs', device: 'tmpfs', o },
    Labels: labels,
  };
}

/** The sandbox container, as data: built here, created in one place (DockerSandbox). */
export function containerOptions(
  name: string,
  spec: SandboxSpec,
  labels: Record<string, string>,
  imageVolumes: readonly string[],
  runtime: RuntimeChoice,
  egress?: SandboxEgress,
): Dockerode.ContainerCreateOptions {
  const hostConfig = hardenedHostConfig(name, spec.limits, isGvisor(runtime.name) ? withGvisorTmp(imageVolumes) : imageVolumes, runtime.name, runtime.engine);
  return {
    name,
    Image: spec.image,
    // Reset any entrypoint the image declares: PID 1 is our runner or keeper, nothing else.
    Entrypoint: [''],
    // Nor does a HEALTHCHECK of the image run commands in the sandbox.
    Healthcheck: { Test: ['NONE'] },
    Cmd: commandOf(spec),
    // The runner's channel is PID 1's stdin and stdout (the attach stream). It is never
    // logged: programs' output passes through it.
    ...(spec.warmRunner === false ? {} : { OpenStdin: true, StdinOnce: false }),
    User: SANDBOX_USER,
    WorkingDir: WORK_ROOT,
    Env: [...sandboxEnv(), ...(egress?.env ?? [])],
    Labels: labels,
    ...(egress ? {} : { NetworkDisabled: true }),
    HostConfig: {
      ...hostConfig,
      // With a network on Docker: only the internal one, whose one other member is the proxy.
      // DNS goes to the sandbox's own loopback, where nothing answers (names are the proxy's to
      // resolve), and a program that asks anyway is told so within a second, not after glibc's
      // 10. No IPv6 either: a link-local address would reach the host's side of the bridge.
      // On Podman, the proxy's namespace, whose firewall and sysctls the proxy's gate set.
      ...(egress?.joinsProxy ? { NetworkMode: egress.network } : {}),
      ...(egress && !egress.joinsProxy
        ? {
            NetworkMode: egress.network,
            Dns: ['127.0.0.1'],
            DnsOptions: ['timeout:1', 'attempts:1'],
            Sysctls: { 'net.ipv6.conf.all.disable_ipv6': '1', 'net.ipv6.conf.default.disable_ipv6': '1' },
          }
        : {}),
      ...(spec.warmRunner === false ? {} : { LogConfig: { Type: 'none', Config: {} } }),
      ...(runtime.runtime ? { Runtime: runtime.runtime } : {}),
    },
  };
}

/** Whether a container found by its labels was made for `spec` (CLI sessions re-attach only to those). */
export function containerMatches(info: Dockerode.ContainerInspectInfo, spec: SandboxSpec, runtime: RuntimeChoice): boolean {
  const h = info.HostConfig as Dockerode.HostConfig & { Runtime?: string };
  return (
    runtimeMatches(h.Runtime, runtime) &&
    reportedImageMatches(info.Config.Image, spec.image, runtime.engine) &&
    (info.Config.Labels?.[LABEL.network] ?? '') === (spec.network ? networkDigest(spec.network) : '') &&
    h.Memory === spec.limits.memoryMb * 1024 * 1024 &&
    h.NanoCpus === Math.round(spec.limits.cpus * 1e9) &&
    h.PidsLimit === processLimits(spec.limits, runtime.name).hostPids &&
    JSON.stringify(commandWithoutAhead(info.Config.Cmd)) === JSON.stringify(commandWithoutAhead(commandOf(spec)))
  );
}

/**
 * Podman reports every container's HostConfig.Runtime as "oci", and runs all of its Docker API's
 * containers under its default (chooseRuntime refuses another there), so there is nothing to compare.
 */
function runtimeMatches(reported: string | undefined, runtime: RuntimeChoice): boolean {
  if (runtime.engine === 'podman') return true;
  return runtime.runtime === undefined ? !reported || reported === runtime.name : reported === runtime.runtime;
}

/** The VOLUME paths an image declares, except our work area (which our own volume covers). */
export async function declaredVolumes(docker: Dockerode, image: string, deadlineMs: number): Promise<string[]> {
  try {
    const info = await withDeadline(docker.getImage(image).inspect(), deadlineMs, 'inspect image');
    const declared = Object.keys(info.Config?.Volumes ?? {});
    return declared.filter((v) => v !== WORK_ROOT && !v.startsWith(`${WORK_ROOT}/`)).sort();
  } catch {
    return []; // createContainer says what is wrong with the image
  }
}

/**
 * Removes a sandbox and its work area, and, on Podman, its own proxy (`sidecar`, named by its
 * LABEL.proxy), which Podman keeps while the sandbox joins it.
 */
export async function removeQuietly(docker: Dockerode, containerId: string | undefined, volumeName: string | undefined, log: Logger, sidecar?: string) {
  if (containerId) {
    await docker
      .getContainer(containerId)
      // v: also the anonymous volumes of the image's VOLUME paths (never a named one such as the work area).
      .remove({ force: true, v: true })
      .catch((e: unknown) => {
        // 404: gone already; 409: another process sharing the engine is removing it right now.
        if (statusCode(e) === 409) log.info(`container ${containerId} is being removed by another process`);
        else if (statusCode(e) !== 404) log.warn(`could not remove container ${containerId}: ${describeError(e)}`);
      });
  }
  if (sidecar) {
    await docker
      .getContainer(sidecar)
      .remove({ force: true })
      .catch((e: unknown) => {
        if (statusCode(e) !== 404) log.warn(`could not remove the network proxy ${sidecar}: ${describeError(e)}`);
      });
  }
  if (volumeName) {
    await docker
      .getVolume(volumeName)
      .remove()
      .catch((e: unknown) => {
        // 409 (in use): its container is still being removed, by another process that removes the volume after it.
        if (statusCode(e) === 409) log.info(`volume ${volumeName} is still in use (its container is being removed by another process)`);
        else if (statusCode(e) !== 404) log.warn(`could not remove volume ${volumeName}: ${describeError(e)}`);
      });
  }
}
