/**
 * Settings a workspace must not choose for the user unless the user trusts it: where the sandbox
 * runs (engine, context, certificates), what it runs (image, backend — the devcontainer backend builds the
 * workspace's Dockerfile with network access — and the Python packages, whose install runs with
 * network access), the domains its programs may reach (network.allow: a deny-list only narrows
 * it, so network.deny is not restricted), and the protections a repository could otherwise
 * switch off for itself (the secrets deny-list, the confirmation).
 */
export const RESTRICTED_SETTINGS = ['image', 'pythonPackages', 'backend', 'dockerHost', 'dockerContext', 'dockerCertPath', 'dockerTlsVerify', 'denyGlobs', 'confirmBeforeRun', 'runtime', 'network.allow'] as const;

/**
 * Settings only the user's own settings may give, in a trusted workspace too: a repository's
 * settings could otherwise send the user's key to the repository's own host.
 */
export const PERSONAL_SETTINGS = ['credentials'] as const;

/** The shape of `WorkspaceConfiguration.inspect()`, reduced to what matters here. */
export interface InspectedSetting {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/**
 * The value in force: in a trusted workspace the usual precedence (folder, workspace, user,
 * default); in an untrusted one, a restricted setting takes only the user's or the default value.
 */
export function settingValue(key: string, inspected: InspectedSetting | undefined, trusted: boolean): unknown {
  if (!inspected) return undefined;
  if ((PERSONAL_SETTINGS as readonly string[]).includes(key)) return inspected.globalValue ?? inspected.defaultValue;
  const restricted = (RESTRICTED_SETTINGS as readonly string[]).includes(key);
  if (trusted || !restricted) {
    return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue ?? inspected.defaultValue;
  }
  return inspected.globalValue ?? inspected.defaultValue;
}

/** True when the value comes from somewhere other than the default (an explicit choice). */
export function isExplicit(key: string, inspected: InspectedSetting | undefined, trusted: boolean): boolean {
  if (!inspected) return false;
  if ((PERSONAL_SETTINGS as readonly string[]).includes(key)) return inspected.globalValue !== undefined;
  const restricted = (RESTRICTED_SETTINGS as readonly string[]).includes(key);
  if (trusted || !restricted) {
    return inspected.workspaceFolderValue !== undefined || inspected.workspaceValue !== undefined || inspected.globalValue !== undefined;
  }
  return inspected.globalValue !== undefined;
}
