import * as vscode from 'vscode';
import { ToolError } from '../core/errors';
import type { Logger } from '../core/logger';
import type { Sandbox, SandboxProvider } from '../core/sandbox';
import { sandboxLimitsOf, type Settings } from '../core/settings';
import { chooseBackend, type BackendChoice } from '../docker/backend';
import { createDockerClient, resolveEngine, type EngineTarget } from '../docker/connection';
import { ensureDevcontainerImage, planDevcontainerImage } from '../docker/devcontainer';
import type { SandboxSpec } from '../docker/dockerSandbox';
import { DockerSandboxProvider } from '../docker/dockerSandboxProvider';
import { removeOrphanedSandboxes } from '../docker/cleanup';
import type { Owner } from '../docker/labels';
import type { SettingsReader } from './config';
import { COMMAND, CONFIG_SECTION } from './ids';

const BUILD_APPROVED_KEY = 'codeactSandbox.devcontainerBuildApproved';

/**
 * Owns the Docker connection and the sandbox provider on it, and decides for every sandbox which
 * image it runs: the configured one, or one built from the workspace's Dev Container
 * configuration. A change of the engine settings replaces the connection (and removes the
 * sandboxes on the old engine); an engine that cannot be configured fails calls with a sentence
 * for the model, never activation.
 */
export class SandboxService implements SandboxProvider, vscode.Disposable {
  private provider: DockerSandboxProvider | undefined;
  private providerKey = '';
  private engine: EngineTarget | undefined;
  private readonly status: vscode.StatusBarItem;
  private choice: BackendChoice | undefined;
  private image: string | undefined;

  constructor(
    private readonly settings: SettingsReader,
    private readonly log: Logger,
    private readonly owner: Owner,
    private readonly workspaceState: vscode.Memento,
  ) {
    this.status = vscode.window.createStatusBarItem('codeactSandbox.status', vscode.StatusBarAlignment.Right, 10);
    this.status.name = 'CodeAct Sandbox';
    this.status.command = COMMAND.showLog;
  }

  /** Sandboxes currently held, by session key. */
  get active(): ReadonlyMap<string, { id: string; image: string }> {
    return this.provider?.active ?? new Map();
  }

  acquire(sessionKey: string, signal: AbortSignal): Promise<Sandbox> {
    return this.current().acquire(sessionKey, signal);
  }

  prewarm(sessionKey: string): void {
    try {
      this.current().prewarm?.(sessionKey);
    } catch {
      // Failures surface at the call itself.
    }
  }

  async removeAll(): Promise<number> {
    return (await this.provider?.removeAll()) ?? 0;
  }

  async dispose(): Promise<void> {
    this.status.dispose();
    const p = this.provider;
    this.provider = undefined;
    await p?.dispose();
  }

  /** Removes sandboxes left by windows that crashed, on the configured engine. */
  async removeOrphans(): Promise<number> {
    const p = this.current();
    return removeOrphanedSandboxes(p.docker, this.owner, this.log);
  }

  /** Builds the Dev Container image again and replaces the sandboxes that ran the old one. */
  async rebuildDevcontainer(): Promise<void> {
    const folder = localFolder();
    if (!folder) throw new ToolError('invalid_settings', 'No local workspace folder is open, so there is no Dev Container to build.');
    const provider = this.current();
    await this.withBuildProgress(async (signal, onProgress) => {
      await ensureDevcontainerImage({
        docker: provider.docker,
        workspaceFolder: folder,
        log: this.log,
        signal,
        onProgress,
        force: true,
        timeoutMs: this.settings.read().devcontainerBuildTimeoutMinutes * 60_000,
        ...(this.engine ? { engine: this.engine } : {}),
        logHint: 'the "CodeAct Sandbox" output channel',
      });
    });
    await provider.removeAll();
  }

  /** The provider for the engine the settings name now. */
  private current(): DockerSandboxProvider {
    const s = this.settings.read();
    const explicitTls = this.settings.isExplicit('dockerTlsVerify');
    const key = JSON.stringify([s.dockerHost, s.dockerContext, s.dockerCertPath, explicitTls ? s.dockerTlsVerify : null, s.idleMinutes]);
    if (this.provider && key === this.providerKey) return this.provider;
    const old = this.provider;
    this.provider = undefined;
    if (old) {
      this.log.info('the Docker connection settings changed; removing the sandboxes on the previous engine');
      void old.dispose();
    }
    // Throws a ToolError with a model-facing sentence for a bad URL or certificate folder.
    const engine = resolveEngine({
      ...(s.dockerHost ? { host: s.dockerHost } : {}),
      ...(s.dockerContext ? { context: s.dockerContext } : {}),
      origin: { host: `setting ${CONFIG_SECTION}.dockerHost`, context: `setting ${CONFIG_SECTION}.dockerContext` },
      ...(s.dockerCertPath ? { certPath: s.dockerCertPath } : {}),
      ...(explicitTls ? { tlsVerify: s.dockerTlsVerify } : {}),
      hint: `the ${CONFIG_SECTION}.dockerHost setting`,
    });
    const docker = createDockerClient(engine);
    this.engine = engine;
    this.log.info(`Docker engine: ${engine.description}`);
    this.provider = new DockerSandboxProvider({
      docker,
      owner: this.owner,
      spec: (signal) => this.specFor(signal),
      imageSettingHint: `the ${CONFIG_SECTION}.image setting`,
      log: this.log,
      idleMs: s.idleMinutes * 60_000,
      onPull: (image, pull) =>
        Promise.resolve(
          vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: `CodeAct Sandbox: pulling ${image}`, cancellable: true },
            async (progress, token) => {
              const abort = new AbortController();
              const sub = token.onCancellationRequested(() => abort.abort());
              let last = 0;
              try {
                await pull((message, fraction) => {
                  const increment = fraction === undefined ? undefined : Math.max(0, fraction * 100 - last);
                  if (fraction !== undefined) last = fraction * 100;
                  progress.report({ message, ...(increment !== undefined ? { increment } : {}) });
                }, abort.signal);
              } finally {
                sub.dispose();
              }
            },
          ),
        ),
    });
    this.providerKey = key;
    return this.provider;
  }

  /** Which image the next sandbox runs, and the limits it gets (the same for every backend). */
  private async specFor(signal: AbortSignal): Promise<SandboxSpec> {
    const s = this.settings.read();
    const base = { limits: sandboxLimitsOf(s), warmRunner: s.warmRunner, preloadModules: s.preloadModules };
    const folder = localFolder();
    let choice = await chooseBackend({
      setting: s.backend,
      ...(folder ? { workspaceFolder: folder } : {}),
      trusted: vscode.workspace.isTrusted,
      settingHint: `the ${CONFIG_SECTION}.backend setting`,
    });
    if (choice.backend === 'devcontainer' && s.backend === 'auto' && this.workspaceState.get(BUILD_APPROVED_KEY) === false) {
      choice = { backend: 'docker', reason: `docker: auto, and the user chose not to build ${choice.configFile}` };
    }
    let image = s.image;
    if (choice.backend === 'devcontainer' && folder) {
      image = await this.devcontainerImage(folder, choice, s, signal);
      if (image === s.image) choice = { backend: 'docker', reason: `docker: auto, and the user chose not to build ${choice.configFile}` };
    }
    this.showStatus(choice, image);
    return { image, ...base };
  }

  private async devcontainerImage(folder: string, choice: BackendChoice, s: Settings, signal: AbortSignal): Promise<string> {
    const provider = this.current();
    const plan = await planDevcontainerImage(provider.docker, folder);
    if (plan.present) return plan.tag;
    if (this.workspaceState.get(BUILD_APPROVED_KEY) !== true) {
      // Building runs the workspace's Dockerfile with network access: the user says yes once.
      const build = 'Build Image';
      const answer = await vscode.window.showWarningMessage(
        `CodeAct Sandbox: build the sandbox image from ${choice.configFile}? The build runs this workspace's Dockerfile with network access; programs then run in it without network, as usual.`,
        { modal: true },
        build,
        'Use the Docker Image',
      );
      const approved = answer === build;
      await this.workspaceState.update(BUILD_APPROVED_KEY, approved);
      if (!approved) {
        if (s.backend === 'auto') return s.image;
        throw new ToolError(
          'cancelled',
          `The user chose not to build the workspace's Dev Container image. Ask the user to set the ${CONFIG_SECTION}.backend setting to docker or auto, or to run "CodeAct Sandbox: Rebuild Dev Container Image".`,
        );
      }
    }
    let image = plan.tag;
    await this.withBuildProgress(async (buildSignal, onProgress) => {
      const abort = new AbortController();
      const stop = () => abort.abort();
      signal.addEventListener('abort', stop, { once: true });
      buildSignal.addEventListener('abort', stop, { once: true });
      try {
        const built = await ensureDevcontainerImage({
          docker: provider.docker,
          workspaceFolder: folder,
          log: this.log,
          signal: abort.signal,
          onProgress,
          timeoutMs: s.devcontainerBuildTimeoutMinutes * 60_000,
          ...(this.engine ? { engine: this.engine } : {}),
          logHint: 'the "CodeAct Sandbox" output channel',
        });
        image = built.image;
      } finally {
        signal.removeEventListener('abort', stop);
      }
    });
    return image;
  }

  private withBuildProgress(run: (signal: AbortSignal, onProgress: (message: string) => void) => Promise<void>): Promise<void> {
    return Promise.resolve(
      vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'CodeAct Sandbox: building the Dev Container image', cancellable: true },
        async (progress, token) => {
          const abort = new AbortController();
          const sub = token.onCancellationRequested(() => abort.abort());
          try {
            await run(abort.signal, (message) => progress.report({ message }));
          } finally {
            sub.dispose();
          }
        },
      ),
    );
  }

  private showStatus(choice: BackendChoice, image: string): void {
    if (this.choice?.reason !== choice.reason || this.image !== image) {
      this.log.info(`sandbox backend ${choice.reason}; image ${image}`);
    }
    this.choice = choice;
    this.image = image;
    this.status.text = `$(vm) Sandbox: ${choice.backend}`;
    this.status.tooltip = new vscode.MarkdownString(
      `**CodeAct Sandbox**\n\n${choice.reason}\n\nImage: \`${image}\`\n\nEngine: ${this.engine ? `${this.engine.displayName} (${this.engine.reason})` : 'the local Docker engine'}`,
    );
    this.status.show();
  }

  /** The backend and image in use, for the API and tests. */
  describe(): { backend?: string; reason?: string; image?: string; engine?: string } {
    return {
      ...(this.choice ? { backend: this.choice.backend, reason: this.choice.reason } : {}),
      ...(this.image ? { image: this.image } : {}),
      ...(this.engine ? { engine: this.engine.displayName } : {}),
    };
  }
}

/** The first workspace folder on the local file system (the devcontainer backend builds from disk). */
function localFolder(): string | undefined {
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file');
  return folder?.uri.fsPath;
}

