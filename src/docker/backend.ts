/**
 * Which image the sandbox runs: the configured one (docker backend) or one built from the
 * workspace's Dev Container configuration (devcontainer backend); `auto` picks the latter when
 * the workspace has a configuration. Decided here, once, for the extension and the CLI alike.
 */
import * as path from 'node:path';
import { ToolError } from '../core/errors';
import { findDevcontainerConfig } from './devcontainer';

export const BACKEND_SETTINGS = ['docker', 'devcontainer', 'auto'] as const;
export type BackendSetting = (typeof BACKEND_SETTINGS)[number];
export type Backend = 'docker' | 'devcontainer';

export interface BackendChoice {
  backend: Backend;
  /** One sentence for the status bar and the log: which backend and why. */
  reason: string;
  /** devcontainer: the configuration, workspace-relative ('/'-separated). */
  configFile?: string;
}

export interface ChooseBackendOptions {
  setting: BackendSetting;
  /** The workspace folder whose configuration is used; undefined when none is open on this machine. */
  workspaceFolder?: string;
  /**
   * A folder is open, but on another machine than the one this runs on (a remote window whose
   * extension runs on the person's computer): its configuration is not built from here.
   */
  remoteFolder?: boolean;
  /**
   * Workspace Trust. Building runs the workspace's Dockerfile with network access, so an
   * untrusted workspace never builds: auto falls back to docker, devcontainer is refused.
   */
  trusted: boolean;
  /** How a model-facing error names the backend setting ("the codeactSandbox.backend setting", "--backend"). */
  settingHint?: string;
}

const REMOTE_AUTO = 'docker: auto, and the workspace folder is on another machine (a Dev Container image is built only from a folder on this computer)';

export async function chooseBackend(o: ChooseBackendOptions): Promise<BackendChoice> {
  const hint = o.settingHint ?? 'the sandbox backend setting';
  if (o.setting === 'docker') return { backend: 'docker', reason: 'docker: the backend is set to docker' };
  const config = o.workspaceFolder ? await findDevcontainerConfig(o.workspaceFolder) : undefined;
  const rel = config && o.workspaceFolder ? path.relative(o.workspaceFolder, config).split(path.sep).join('/') : undefined;
  if (o.setting === 'auto') {
    if (!o.workspaceFolder) return { backend: 'docker', reason: o.remoteFolder ? REMOTE_AUTO : 'docker: auto, and no workspace folder is open' };
    if (!rel) return { backend: 'docker', reason: 'docker: auto, and the workspace has no Dev Container configuration' };
    if (!o.trusted) return { backend: 'docker', reason: `docker: auto, and the workspace is not trusted, so its ${rel} is not built` };
    return { backend: 'devcontainer', reason: `devcontainer: auto, and the workspace has ${rel}`, configFile: rel };
  }
  if (!o.trusted) {
    throw new ToolError(
      'invalid_settings',
      `The sandbox is set to build the workspace's Dev Container, but the workspace is not trusted, so nothing from it is built. Ask the user to trust the workspace, or to set ${hint} to docker.`,
    );
  }
  if (!o.workspaceFolder || !rel) {
    throw new ToolError(
      'invalid_settings',
      o.workspaceFolder || !o.remoteFolder
        ? `The sandbox is set to use the workspace's Dev Container, but ${o.workspaceFolder ? 'the workspace has no .devcontainer/devcontainer.json (or .devcontainer.json)' : 'no workspace folder is open'}. Ask the user to add one, or to set ${hint} to docker or auto.`
        : `The sandbox is set to use the workspace's Dev Container, but the workspace folder is on another machine, and a Dev Container image is built only from a folder on the user's computer. Ask the user to set ${hint} to docker or auto.`,
    );
  }
  return { backend: 'devcontainer', reason: `devcontainer: the backend is set to devcontainer (${rel})`, configFile: rel };
}
