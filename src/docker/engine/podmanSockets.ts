/**
 * Where Podman's own tools look for its API service, for a person who runs Podman and nothing
 * named an engine: Docker's lookup (resolve.ts) never finds it, so a working Podman would be
 * reported as "not running". Pure: the caller pings what exists (state.ts, findPodman).
 *
 * The order is podman-remote's: CONTAINER_HOST first; on Linux the rootless socket under the
 * user's runtime folder, then the rootful one; on macOS the API socket `podman machine start`
 * forwards (Podman 5 in TMPDIR, Podman 4 under the machine's data folder); on Windows the
 * machine's named pipe. Each candidate carries the address as the engine setting would hold it,
 * so "Use Podman" writes what a person would have written (and what Settings Sync can carry).
 */
import * as os from 'node:os';
import * as path from 'node:path';

export interface PodmanCandidate {
  /** The address to connect to (unix:// or npipe://), every variable expanded. */
  address: string;
  /** The same address as the codeactSandbox.dockerHost setting holds it (`$XDG_RUNTIME_DIR`, `~` kept). */
  setting: string;
  /** For the log: where the candidate comes from. */
  why: string;
}

const MACHINE = 'podman-machine-default';

/** The user's runtime folder as Podman takes it: XDG_RUNTIME_DIR, else /run/user/UID. */
export function runtimeDir(env: NodeJS.ProcessEnv, uid: number | undefined = os.userInfo().uid): string {
  const dir = env.XDG_RUNTIME_DIR?.trim();
  return dir ? dir : `/run/user/${uid ?? 0}`;
}

export function podmanCandidates(env: NodeJS.ProcessEnv, platform: NodeJS.Platform, home: string, uid?: number): PodmanCandidate[] {
  const out: PodmanCandidate[] = [];
  const host = env.CONTAINER_HOST?.trim();
  // Podman's own override; only a local socket or pipe is tried here (an ssh:// one needs Podman's identity files).
  if (host && /^(unix|npipe):\/\//i.test(host)) out.push({ address: host, setting: host, why: 'CONTAINER_HOST' });
  if (platform === 'win32') {
    out.push({ address: `npipe:////./pipe/${MACHINE}`, setting: `npipe:////./pipe/${MACHINE}`, why: `the pipe of ${MACHINE}` });
    return out;
  }
  if (platform === 'darwin') {
    const tmp = env.TMPDIR?.trim() || os.tmpdir();
    out.push({ address: `unix://${path.join(tmp, 'podman', `${MACHINE}-api.sock`)}`, setting: `unix://${path.join(tmp, 'podman', `${MACHINE}-api.sock`)}`, why: `the API socket of ${MACHINE} (Podman 5)` });
    for (const dir of [MACHINE, 'qemu']) {
      const rel = path.posix.join('.local/share/containers/podman/machine', dir, 'podman.sock');
      out.push({ address: `unix://${path.join(home, rel)}`, setting: `unix://~/${rel}`, why: `the API socket of ${MACHINE} (Podman 4, ${dir})` });
    }
    return out;
  }
  out.push({ address: `unix://${runtimeDir(env, uid)}/podman/podman.sock`, setting: 'unix://$XDG_RUNTIME_DIR/podman/podman.sock', why: 'rootless Podman' });
  out.push({ address: 'unix:///run/podman/podman.sock', setting: 'unix:///run/podman/podman.sock', why: 'rootful Podman' });
  return out;
}

/**
 * `~` at the start of a unix:// path, and `$XDG_RUNTIME_DIR` (or `${XDG_RUNTIME_DIR}`) and `$HOME`
 * anywhere in it, as a shell would expand them where the person copied the address from (Podman's
 * documentation writes `unix://$XDG_RUNTIME_DIR/podman/podman.sock`). Other addresses are left as
 * they are: a tcp:// or ssh:// address names another machine, whose variables are not ours.
 */
export function expandSocketAddress(raw: string, env: NodeJS.ProcessEnv, home: string, uid?: number): string {
  const m = /^(unix:\/\/)(.*)$/i.exec(raw);
  if (!m) return raw;
  let rest = m[2]!;
  if (rest === '~' || rest.startsWith('~/')) rest = home + rest.slice(1);
  rest = rest.replace(/\$\{XDG_RUNTIME_DIR\}|\$XDG_RUNTIME_DIR(?![A-Za-z0-9_])/g, () => runtimeDir(env, uid));
  rest = rest.replace(/\$\{HOME\}|\$HOME(?![A-Za-z0-9_])/g, () => home);
  return `${m[1]}${rest}`;
}
