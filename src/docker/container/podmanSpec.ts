import type Dockerode from 'dockerode';
import type { Logger } from '../../core/logger';
import type { SandboxLimits } from '../../core/limits';
import type { EngineIdentity } from '../engine';

/**
 * Where Podman's Docker-compatible API needs the sandbox made another way, as data. Each gives the
 * same bound by another route; what has no route is said in PODMAN_DIFFERENCES (logged once per
 * engine, and in the README).
 */

/**
 * tmpfs counts its size in pages: 4 KiB on the x86-64 and arm64 kernels Podman runs on (Podman
 * machine and Podman Desktop VMs included). The bound is checked against the mounted size where a
 * test can see it (test/docker/podman.test.ts).
 */
const TMPFS_PAGE_BYTES = 4096;

/**
 * The work area's mount options on Podman. Podman 4 refuses a volume whose options carry `size`
 * ("volume options size and inodes not supported. Filesystem does not support Project Quota"):
 * it takes `size` for a quota of its own, even for a tmpfs volume. tmpfs itself takes the same
 * bound as `nr_blocks`, which Podman passes through to the mount untouched.
 */
export function podmanWorkAreaMountOptions(limits: SandboxLimits, uid: number, gid: number): string {
  const blocks = Math.ceil((limits.workAreaMb * 1024 * 1024) / TMPFS_PAGE_BYTES);
  return `nr_blocks=${blocks},uid=${uid},gid=${gid},mode=0700`;
}

/**
 * Open files and processes per sandbox on Podman. Given no `nofile` or `nproc` limit, rootful
 * Podman raises both to 1048576 / 4194304 itself, which the kernel refuses where the service lacks
 * CAP_SYS_RESOURCE ("error setting rlimit type 7: operation not permitted") and no sandbox needs.
 * Docker leaves the engine's own limits in place; these are at or below those on common hosts.
 * The pids limit (the cgroup) still bounds processes; nproc here is only above it.
 */
export const PODMAN_RLIMITS = [
  { Name: 'nofile', Soft: 4096, Hard: 4096 },
  { Name: 'nproc', Soft: 16384, Hard: 16384 },
] as const;

/**
 * Where Podman mounts a writable tmpfs of its own in a container with a read-only root
 * (read_only_tmpfs, on by default and not settable through its Docker API): left alone, a
 * program could write there, outside the size-bounded work area.
 */
export const PODMAN_READ_ONLY_TMPFS = ['/run', '/tmp', '/var/tmp'] as const;

/**
 * Read-only empty covers as Podman applies them: Podman's own writable tmpfs paths (it leaves a
 * path alone that has a mount already), plus the image's VOLUME paths and gVisor's /tmp. On its
 * REST path a `tmpfs` mount's TmpfsOptions are ignored (containers/podman#10831), so their size
 * and mode go as HostConfig.Tmpfs options, which it honours.
 */
export function podmanTmpfsCovers(paths: readonly string[]): Pick<Dockerode.HostConfig, 'Tmpfs'> {
  const covered = [...new Set([...PODMAN_READ_ONLY_TMPFS, ...paths])].sort();
  return { Tmpfs: Object.fromEntries(covered.map((p) => [p, 'ro,size=1m,mode=0755'])) };
}

/**
 * Whether the image a container reports is the one the settings name. Podman reports a short name
 * qualified: a local image under `localhost/`, a pulled one under its registry
 * (`<registry>/library/python:3.12-slim` for an official image), and a name without a tag with `:latest`. The sandbox
 * keeps the user's name (so `codeact-sandbox/python:bookworm` finds Podman's
 * `localhost/codeact-sandbox/python:bookworm`, which Podman resolves itself) and compares so.
 */
export function reportedImageMatches(reported: string, wanted: string, engine: 'docker' | 'podman'): boolean {
  if (reported === wanted) return true;
  if (engine !== 'podman') return false;
  const lastPart = wanted.slice(wanted.lastIndexOf('/') + 1);
  const tagged = lastPart.includes(':') || lastPart.includes('@') ? wanted : `${wanted}:latest`;
  if (reported === tagged) return true;
  if (!reported.endsWith(`/${tagged}`)) return false;
  // Only a registry (a host: localhost, a dot or a port) may have been put in front of the name,
  // and `library/` with it for a one-part name (Docker Hub's official images).
  const prefix = reported.slice(0, reported.length - tagged.length - 1).split('/');
  const registry = prefix[0]!;
  const isHost = registry === 'localhost' || registry.includes('.') || registry.includes(':');
  return isHost && (prefix.length === 1 || (prefix.length === 2 && prefix[1] === 'library' && !wanted.includes('/')));
}

/**
 * What does not hold on Podman as on Docker, in the words of the README ("What differs under
 * Podman"). Said in the log once per engine, never dropped silently.
 */
export const PODMAN_DIFFERENCES: readonly string[] = [
  'a sandbox may hold at most 4096 open files (Docker: the engine\'s own limit)',
  'the work area is bounded in 4 KiB pages: on a kernel with larger pages it is larger, within the memory limit',
  'every sandbox runs under Podman\'s default runtime: auto keeps it, and another one named is refused (Podman\'s Docker API would not use it)',
];

const told = new WeakSet<Logger>();

/** Says once per log what differs on this engine. */
export function logPodmanDifferences(log: Logger, engine: EngineIdentity): void {
  if (told.has(log)) return;
  told.add(log);
  log.info(`the engine is ${engine.label}: same hardening and limits; what differs: ${PODMAN_DIFFERENCES.join('; ')}`);
}
