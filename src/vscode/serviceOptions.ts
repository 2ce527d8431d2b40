/** What the sandbox service is made of (its effects and stores), and the host tests' proxy settings. */
import * as fs from 'node:fs';
import type { CredentialBinding, SandboxCredentials } from '../core/credentials';
import type { Logger } from '../core/logger';
import { ensureDevcontainerImage, planDevcontainerImage, type ChatRecords, type DockerSandboxProvider, type Owner, type PodmanFound, type ProviderOptions, type ProxyTesting } from '../docker';
import type { SettingsReader } from './config';
import type { DataImageOps } from './dataImages';
import type { Ui, WorkspaceEnv, WorkspaceState } from './ui';
import type { WindowPlace } from './windowPlace';

/** The Dev Container image operations the service uses (the Docker layer's; tests pass fakes). */
export interface DevcontainerImages {
  plan: typeof planDevcontainerImage;
  ensure: typeof ensureDevcontainerImage;
}

export interface SandboxServiceOptions {
  settings: SettingsReader;
  log: Logger;
  owner: Owner;
  ui: Ui;
  workspace: WorkspaceEnv;
  /** Keeps the user's answer to the build question. */
  state: WorkspaceState;
  devcontainer?: DevcontainerImages;
  /** The data image operations (the Docker layer's; tests pass fakes). */
  dataImages?: DataImageOps;
  /** Tests wrap the provider to see what it was given. */
  createProvider?: (options: ProviderOptions) => DockerSandboxProvider;
  /**
   * Where the host tests' servers are (test/host/internet.ts): a file the proxy's test settings
   * are read from. Set only for an extension host that runs tests, never an installed extension.
   */
  testInternetFile?: string;
  /** Storage across windows (globalState): a dismissed engine notice stays dismissed. */
  globalState?: WorkspaceState;
  /** Whether a docker or podman command is installed here (a missing socket without one is no engine at all). */
  engineCliFound?: () => boolean;
  /** The window's run records: a chat's prepared image goes when its chat has no records left. */
  chatRecords?: ChatRecords;
  /** The platform the extension runs on (install links); default: this process's. */
  platform?: NodeJS.Platform;
  /** Where the extension runs against the workspace (windowPlace.ts); default: a local window. */
  place?: WindowPlace;
  /** Where Podman's tools look, and whether one answers there (tests pass a fake). */
  findPodman?: () => Promise<PodmanFound | undefined>;
  /** The user's credentials for the bindings the settings give (values stay in SecretStorage until a proxy starts). */
  credentials?: (bindings: readonly CredentialBinding[]) => SandboxCredentials | undefined;
}

/** The host tests' proxy settings (SandboxServiceOptions.testInternetFile), read once. */
let testInternet: ProxyTesting | undefined;
export function proxyTesting(file: string): ProxyTesting {
  testInternet ??= (JSON.parse(fs.readFileSync(file, 'utf8')) as { testing: ProxyTesting }).testing;
  return testInternet;
}
