/**
 * Where this window's extension runs and where its engine is, by the kind of window. VS Code
 * runs the extension where `extensionKind` says first (`ui`: the person's own computer) unless
 * the person moved it (`remote.extensionKind`), and a browser-only window (Codespaces in a
 * browser, code-server) has no such computer to run it on (the extension has no web entry), so
 * it runs next to the workspace. What each kind of window means for the engine:
 *
 * - local: the extension and the engine are on this computer.
 * - SSH (`ssh-remote`), extension on the person's computer: the engine it looks for is this
 *   computer's. The SSH host's own engine is reached over SSH (an `ssh://` engine address, which
 *   runs `docker system dial-stdio` there), so the view offers that.
 * - WSL, extension on Windows: Docker Desktop's WSL 2 engine answers Windows and every distro,
 *   so the local engine is right. An engine installed only inside the distro cannot be reached
 *   from Windows: the view offers to run the extension in WSL (`remote.extensionKind`).
 * - Dev Container (`dev-container`, `attached-container`), extension on the person's computer:
 *   the engine that runs the Dev Container is this computer's, and the sandbox runs on it too.
 * - Codespaces, extension on the person's computer (VS Code desktop): the codespace has no
 *   engine this computer can reach. Inside the codespace, an engine exists only with the
 *   docker-in-docker feature, and the extension must run there: the view offers both.
 * - Any of these with the extension running next to the workspace (moved there, or a browser
 *   window): the workspace's machine is "this computer", and its engine is the one looked for.
 *
 * Pure: the facts come from vscode.env.remoteName, the extension's extensionKind and the first
 * workspace folder's URI.
 */

export type WindowKind = 'local' | 'ssh' | 'wsl' | 'devcontainer' | 'codespaces' | 'remote';

export interface WindowPlace {
  /** The kind of window, as far as it changes what the engine advice says. */
  kind: WindowKind;
  /** The extension runs on the person's computer while the workspace is elsewhere. */
  apart: boolean;
  /** VS Code's name of the remote ("ssh-remote", "wsl", ...), when there is one. */
  remoteName?: string;
  /** The SSH host the window is connected to (from the folder's authority), when it says. */
  sshHost?: string;
}

/** vscode.ExtensionKind: 1 the person's computer (UI), 2 next to the workspace. */
export type ExtensionKindValue = 1 | 2;

export function windowPlace(remoteName: string | undefined, extensionKind: ExtensionKindValue, folderAuthority?: string): WindowPlace {
  if (!remoteName) return { kind: 'local', apart: false };
  const kind: WindowKind =
    remoteName === 'ssh-remote'
      ? 'ssh'
      : remoteName === 'wsl'
        ? 'wsl'
        : remoteName === 'dev-container' || remoteName === 'attached-container'
          ? 'devcontainer'
          : remoteName === 'codespaces'
            ? 'codespaces'
            : 'remote';
  const sshHost = kind === 'ssh' ? sshHostOf(folderAuthority) : undefined;
  return { kind, apart: extensionKind === 1, remoteName, ...(sshHost ? { sshHost } : {}) };
}

/**
 * The host of an SSH window's folder authority: `ssh-remote+build-box`, or the hex of a JSON
 * object with `hostName` (how Remote-SSH writes a host given with options). Undefined when it
 * says neither plainly: the person then types the address themselves.
 */
export function sshHostOf(authority: string | undefined): string | undefined {
  const m = /^ssh-remote\+(.+)$/.exec(authority ?? '');
  if (!m) return undefined;
  const rest = decodeURIComponent(m[1]!);
  if (/^[0-9a-f]+$/i.test(rest) && rest.length % 2 === 0) {
    try {
      const parsed = JSON.parse(Buffer.from(rest, 'hex').toString('utf8')) as { hostName?: unknown };
      if (typeof parsed.hostName === 'string' && plainHost(parsed.hostName)) return parsed.hostName;
    } catch {
      // Not JSON: a host name made of hex digits.
    }
  }
  return plainHost(rest) ? rest : undefined;
}

/** A user@host or host an ssh:// address can carry as it is. */
function plainHost(s: string): boolean {
  return /^([A-Za-z0-9._-]+@)?[A-Za-z0-9.-]+$/.test(s);
}

/** The engine address for the SSH host's own engine. */
export function sshEngineAddress(host: string): string {
  return `ssh://${host}`;
}
