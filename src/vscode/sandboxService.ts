import { ToolError } from '../core/errors';
import type { Sandbox, SandboxProvider } from '../core/sandbox';
import { credentialsOf, networkOf, sandboxLimitsOf, type Settings } from '../core/settings';
import {
  DockerSandboxProvider,
  ImageBuildError,
  chooseBackend,
  createDockerClient,
  engineIdentityOf,
  ensureDevcontainerImage,
  planDevcontainerImage,
  removeOrphanedSandboxes,
  resolveEngine,
  type BackendChoice,
  type EngineState,
  type EngineTarget,
  type SandboxSpec,
} from '../docker';
import { DataImages, type PreparedImage } from './dataImages';
import { COMMAND, CONFIG_SECTION } from './ids';
import {
  BUILD_ANSWER,
  PACKAGES_ANSWER,
  PACKAGES_SETTING,
  packagesKey,
  buildQuestion,
  decideAfterAnswer,
  decideAfterPackagesAnswer,
  packagesQuestion,
  decideSandbox,
  needsDevcontainerImage,
  prewarmImage,
  type SandboxDecision,
  type SandboxFacts,
} from './sandboxDecision';
import { EngineCheck } from './engineCheck';
import { ENGINE_ANSWERED_CONTEXT, EngineStateTracker, HAS_RUN_CONTEXT, IMAGE_MISSING_SENTENCE, IMAGE_READY_CONTEXT, IMAGE_STATE_CONTEXT, engineStatusView } from './engineState';
import { proxyTesting, type DevcontainerImages, type SandboxServiceOptions } from './serviceOptions';
import { buildingView, engineView, pullProgress, statusView } from './status';
import { ACTION, type StatusItem } from './ui';
import type { WindowPlace } from './windowPlace';

export const BUILD_APPROVED_KEY = 'codeactSandbox.devcontainerBuildApproved';
export const PACKAGES_APPROVED_KEY = 'codeactSandbox.packagesBuildApproved';
/** How long the chat's line waits to learn whether a call builds the data image first. */
const WILL_BUILD_LOOK_MS = 2_000;
/** The settings that name the engine: a change makes a new connection, and the engine is asked again. */
export const ENGINE_SETTINGS = ['dockerHost', 'dockerContext', 'dockerCertPath', 'dockerTlsVerify'].map((k) => `${CONFIG_SECTION}.${k}`);
export type { DevcontainerImages, SandboxServiceOptions } from './serviceOptions';

/** One call's facts and what carrying out its decision needs. */
interface CallContext {
  facts: SandboxFacts;
  folder: string | undefined;
  settings: Settings;
  signal: AbortSignal;
}

/**
 * Owns the Docker connection and the sandbox provider on it, and decides for every sandbox which
 * image it runs: the configured one, or one built from the workspace's Dev Container
 * configuration. A change of the engine settings replaces the connection (and removes the
 * sandboxes on the old engine); an engine that cannot be configured fails calls with a sentence
 * for the model, never activation.
 */
export class SandboxService implements SandboxProvider {
  private provider: DockerSandboxProvider | undefined;
  private providerKey = '';
  private engine: EngineTarget | undefined;
  private readonly status: StatusItem;
  /** What the status item shows now (for the API and tests). */
  statusShown: { text: string; tooltip: string } | undefined;
  private choice: BackendChoice | undefined;
  private image: string | undefined;
  /** The runtime the last sandbox runs under (known once the engine was asked). */
  private runtime: string | undefined;
  private readonly devcontainer: DevcontainerImages;
  private readonly data: DataImages;
  /** Package lists the person answered Not Now in this window: not asked again until the window reloads. */
  private readonly packagesDeclined = new Set<string>();
  /** Sentences already logged about settings that do not apply. */
  private readonly noted = new Set<string>();
  readonly engineState: EngineStateTracker;
  private readonly engineCheck: EngineCheck;
  /** The image a call could not have, until a call gets a sandbox again (told once per image). */
  private missingImage: string | undefined;
  private readonly missingImagesTold = new Set<string>();

  constructor(private readonly deps: SandboxServiceOptions) {
    this.devcontainer = deps.devcontainer ?? { plan: planDevcontainerImage, ensure: ensureDevcontainerImage };
    const item = deps.ui.createStatusItem({ id: 'codeactSandbox.status', name: 'CodeAct Sandbox', command: COMMAND.showLog });
    this.status = {
      show: (text, tooltip, warning) => {
        this.statusShown = { text, tooltip };
        item.show(text, tooltip, warning);
      },
      dispose: () => item.dispose(),
    };
    this.data = new DataImages({ ui: deps.ui, log: deps.log, onBuilding: (building) => this.onBuilding(building), ...(deps.dataImages ? { ops: deps.dataImages } : {}) });
    this.engineState = new EngineStateTracker(
      {
        setContext: (key, value) => deps.ui.setContext(key, value),
        notify: (message, ...items) => deps.ui.notify(message, ...items),
        executeCommand: (command, ...args) => deps.ui.executeCommand(command, ...args),
        openLink: (url) => deps.ui.openLink(url),
        showStatus: (state) => this.showEngineStatus(state),
      },
      deps.globalState ?? deps.state,
      { platform: deps.platform ?? process.platform, place: deps.place ?? { kind: 'local', apart: false } },
    );
    this.engineCheck = new EngineCheck({
      log: deps.log,
      tracker: this.engineState,
      platform: deps.platform ?? process.platform,
      cliFound: () => deps.engineCliFound?.() ?? true,
      ...(deps.findPodman ? { findPodman: deps.findPodman } : {}),
    });
  }

  /**
   * Asks the engine now: its state, for the view, the status item and a notice. `asked`: a
   * person asked (Retry, the command, the walkthrough's button), not the window's own check or a
   * change of the engine settings; they see it being asked, and its answer either way.
   */
  async checkEngine(asked = true): Promise<EngineState> {
    const check = () => this.engineCheck.check(() => ({ docker: this.current().docker, target: this.engine }));
    const state = asked ? await this.deps.ui.busy('CodeAct Sandbox: checking the container engine', check) : await check();
    if (state === 'ok') {
      this.showEngineStatus('ok');
      if (asked) {
        this.deps.ui.setContext(ENGINE_ANSWERED_CONTEXT, Date.now());
        this.deps.ui.showInfo(`CodeAct Sandbox: ${engineView(this.engine, this.engineCheck.identity).line} answers; Copilot can run programs in the sandbox.`);
      }
    } else if (asked) {
      this.engineState.tell(state);
    }
    return state;
  }

  /** The Podman a person chose to use (Use Podman): the engine address it answers at, as the setting holds it. */
  async podmanAddress(): Promise<string | undefined> {
    return (await this.engineCheck.podman())?.candidate.setting;
  }

  /**
   * An image the engine lacks and could not pull: the view says so with its buttons, and one
   * notification per image. A data image that could not be built is not that: its build's own
   * notification said what happened (dataImages.ts), once.
   */
  private noteImageFailure(e: unknown): void {
    if (!(e instanceof ToolError) || e.code !== 'image_unavailable' || e instanceof ImageBuildError) return;
    const image = this.image ?? '';
    this.missingImage = image;
    this.deps.ui.setContext(IMAGE_STATE_CONTEXT, 'missing');
    if (this.missingImagesTold.has(image)) return;
    this.missingImagesTold.add(image);
    // Prepare builds the data image, never a named one: it cannot help here.
    this.deps.ui.showError(`CodeAct Sandbox: ${IMAGE_MISSING_SENTENCE}`, ACTION.chooseImage, ACTION.showLog);
  }

  private showEngineStatus(state: EngineState): void {
    if (state !== 'ok') {
      const view = engineStatusView(state, this.engineState.advice);
      this.status.show(view.text, view.tooltip, { command: COMMAND.checkEngine });
    } else if (this.choice && this.image) {
      this.showStatus(this.choice, this.image, true);
    } else if (!this.data.building) {
      // The engine answers and no call has chosen an image yet: the warning is over all the same.
      const view = statusView({ engine: engineView(this.engine, this.engineCheck.identity), ...(this.runtime ? { runtime: this.runtime } : {}) });
      this.status.show(view.text, view.tooltip);
    }
  }

  /**
   * Whether the next call waits for the data image to be built: this window builds it now, or it
   * is not on the engine yet (the first call starts its build, minutes long). A quick look only:
   * when the engine is slow to say, the line says nothing of a build.
   */
  async willBuild(): Promise<boolean> {
    if (this.data.building) return true;
    const s = this.deps.settings.read();
    if (s.image) return false;
    try {
      const { facts } = await this.gather(s);
      const decision = decideSandbox(facts);
      if (decision.kind !== 'data' && decision.kind !== 'ask-packages') return false;
      const look = this.data.missing(this.current().docker, decision.requirements);
      const quick = new Promise<false>((resolve) => setTimeout(resolve, WILL_BUILD_LOOK_MS, false).unref());
      return await Promise.race([look, quick]);
    } catch {
      return false;
    }
  }

  /** Where this window's extension runs against its workspace. */
  get place(): WindowPlace {
    return this.deps.place ?? { kind: 'local', apart: false };
  }

  /** Whether this window is building the sandbox image now (a call waits for it). */
  get building(): boolean {
    return this.data.building;
  }

  /** Sandboxes currently held, by session key. */
  get active(): ReadonlyMap<string, { id: string; image: string }> {
    return this.provider?.active ?? new Map();
  }

  async acquire(sessionKey: string, signal: AbortSignal): Promise<Sandbox> {
    let sandbox: Sandbox;
    let provider: DockerSandboxProvider | undefined;
    try {
      provider = this.current();
      sandbox = await provider.acquire(sessionKey, signal);
    } catch (e) {
      const told = await this.engineCheck.failed(e, this.engine);
      this.noteImageFailure(e);
      throw told ?? e;
    }
    if (this.missingImage !== undefined) {
      this.missingImage = undefined;
      this.deps.ui.setContext(IMAGE_STATE_CONTEXT, 'ok');
    }
    // The provider asked the engine what it is already: the answer is its client's, kept.
    const identity = engineIdentityOf(provider.docker);
    if (identity) this.engineCheck.answered(identity);
    else this.engineState.set('ok');
    this.deps.ui.setContext(ENGINE_ANSWERED_CONTEXT, Date.now());
    this.deps.ui.setContext(IMAGE_READY_CONTEXT, Date.now());
    this.deps.ui.setContext(HAS_RUN_CONTEXT, Date.now());
    if (sandbox.runtime !== this.runtime && this.choice && this.image) {
      this.runtime = sandbox.runtime;
      this.showStatus(this.choice, this.image);
    }
    return sandbox;
  }

  prewarm(sessionKey: string): void {
    try {
      this.current().prewarm(sessionKey);
    } catch {
      // Failures surface at the call itself.
    }
  }

  sessionSandbox(sessionKey: string): { id: string; mayHoldState: boolean } | undefined {
    return this.provider?.sessionSandbox(sessionKey);
  }

  async removeAll(): Promise<number> {
    return (await this.provider?.removeAll()) ?? 0;
  }

  /** A chat's records were deleted in the view (undefined: all of them): its prepared image goes too. */
  async forgetChat(sessionDigest: string | undefined): Promise<void> {
    let provider: DockerSandboxProvider;
    try {
      provider = this.current();
    } catch {
      return; // no engine configured: there is no image to remove
    }
    await provider.forgetChat(sessionDigest);
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
    return removeOrphanedSandboxes(p.docker, this.deps.owner, this.deps.log);
  }

  /** Builds the Dev Container image again and replaces the sandboxes that ran the old one. */
  async rebuildDevcontainer(): Promise<void> {
    return this.noting(() => this.rebuild());
  }

  /** A command's failure at the engine sets the engine's state, as a call's does; the person is told by the command. */
  private async noting<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (e) {
      throw (await this.engineCheck.failed(e, this.engine)) ?? e;
    }
  }

  private async rebuild(): Promise<void> {
    const folder = this.deps.workspace.localFolder();
    if (!folder) {
      throw new ToolError(
        'invalid_settings',
        this.deps.workspace.remoteFolder()
          ? "The workspace folder is on another machine, and a Dev Container image is built only from a folder on the user's computer."
          : 'No workspace folder is open, so there is no Dev Container to build.',
      );
    }
    await this.build(folder, this.deps.settings.read(), undefined, true);
    await this.current().removeAll();
  }

  /**
   * The Prepare command: builds the data image and the packages of the setting now (the user's
   * own request: it counts as the answer to the packages question). `notUsed` when the settings
   * name another image.
   */
  async prepareImage(): Promise<PreparedImage | { notUsed: string }> {
    return this.noting(() => this.prepare());
  }

  private async prepare(): Promise<PreparedImage | { notUsed: string }> {
    const s = this.deps.settings.read();
    const { facts } = await this.gather(s);
    const decision = decideSandbox({ ...facts, packagesApproval: facts.trusted || facts.packagesApproval });
    if (decision.kind === 'refuse') throw new ToolError(decision.code, decision.message);
    if (decision.kind !== 'data' && decision.kind !== 'ask-packages') {
      // Nothing of ours to prepare: the walkthrough's step is done.
      this.deps.ui.setContext(IMAGE_READY_CONTEXT, Date.now());
      return { notUsed: decision.kind === 'configured' ? `${CONFIG_SECTION}.image names ${decision.image}` : 'the sandbox runs the Dev Container image' };
    }
    if (decision.requirements.length && facts.packagesApproval !== true) await this.approvePackages(decision.requirements);
    const prepared = await this.data.prepare(this.current().docker, decision.requirements);
    this.deps.ui.setContext(IMAGE_READY_CONTEXT, Date.now());
    this.showStatus(decision.choice, prepared.tag);
    return prepared;
  }

  /**
   * For pre-warming: the spec when it can be had without asking the user, building or pulling,
   * else undefined. A Dev Container image is used only when it is on the engine and the user
   * approved building it; the provider still checks that the configured image is present.
   */
  async prewarmSpec(): Promise<SandboxSpec | undefined> {
    const s = this.deps.settings.read();
    let facts: SandboxFacts;
    try {
      ({ facts } = await this.gather(s));
    } catch {
      return undefined; // the call itself reports it
    }
    const target = prewarmImage(decideSandbox(facts), facts);
    if (target === undefined) return undefined;
    if ('image' in target) return this.specOf(s, target.image);
    const tag = await this.data.present(this.current().docker, target.dataImage).catch(() => undefined);
    return tag === undefined ? undefined : this.specOf(s, tag, PACKAGES_SETTING);
  }

  /** The backend and image in use, for the API and tests. */
  describe(): { backend?: string; reason?: string; image?: string; engine?: string; runtime?: string } {
    return {
      ...(this.runtime ? { runtime: this.runtime } : {}),
      ...(this.choice ? { backend: this.choice.backend, reason: this.choice.reason } : {}),
      ...(this.image ? { image: this.image } : {}),
      ...(this.engine ? { engine: engineView(this.engine, this.engineCheck.identity).line } : {}),
    };
  }

  /** The provider for the engine the settings name now. */
  private current(): DockerSandboxProvider {
    const s = this.deps.settings.read();
    const explicitTls = this.deps.settings.isExplicit('dockerTlsVerify');
    // Read when the provider is made: a change of any of them makes a new one.
    const key = JSON.stringify([s.dockerHost, s.dockerContext, s.dockerCertPath, explicitTls ? s.dockerTlsVerify : null, s.idleMinutes, s.spareSandboxes, s.maxSandboxes]);
    if (this.provider && key === this.providerKey) return this.provider;
    const old = this.provider;
    this.provider = undefined;
    if (old) {
      this.deps.log.info('the Docker connection settings changed; removing the sandboxes on the previous engine');
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
    this.engine = engine;
    this.deps.log.info(`Docker engine: ${engine.description}`);
    const create = this.deps.createProvider ?? ((options) => new DockerSandboxProvider(options));
    this.provider = create({
      docker: createDockerClient(engine),
      owner: this.deps.owner,
      spec: (signal) => this.specFor(signal),
      // Pre-warming runs while the chat prepares a call: it must never ask, build or pull.
      prewarmSpec: () => this.prewarmSpec(),
      imageSettingHint: `the ${CONFIG_SECTION}.image setting`,
      runtimeSettingHint: `the ${CONFIG_SECTION}.runtime setting`,
      log: this.deps.log,
      idleMs: s.idleMinutes * 60_000,
      spareSandboxes: s.spareSandboxes,
      maxSandboxes: s.maxSandboxes,
      keepChatImages: true,
      ...(this.deps.chatRecords ? { chatRecords: this.deps.chatRecords } : {}),
      onPull: (image, pull) => this.deps.ui.withProgress(`CodeAct Sandbox: pulling ${image}`, (report, signal) => pull(pullProgress(report), signal)),
    });
    this.providerKey = key;
    // The spares are made from an image already on the engine only (prewarmSpec): never a prompt or a build.
    void this.provider.fillSpares?.();
    return this.provider;
  }

  /** The spec for a call: may ask the user and build first (the call waits for both). */
  private async specFor(signal: AbortSignal): Promise<SandboxSpec> {
    const s = this.deps.settings.read();
    const { facts, folder } = await this.gather(s);
    const { choice, image, packagesSetting } = await this.carryOut(decideSandbox(facts), { facts, folder, settings: s, signal });
    this.showStatus(choice, image);
    return this.specOf(s, image, packagesSetting);
  }

  /** What the decision is made from; the only effects are reading the workspace and inspecting an image. */
  private async gather(s: Settings): Promise<{ facts: SandboxFacts; folder: string | undefined }> {
    const folder = this.deps.workspace.localFolder();
    const trusted = this.deps.workspace.isTrusted();
    const choice = await chooseBackend({
      setting: s.backend,
      ...(folder ? { workspaceFolder: folder } : { remoteFolder: this.deps.workspace.remoteFolder() }),
      trusted,
      settingHint: `the ${CONFIG_SECTION}.backend setting`,
    });
    const stored = this.deps.state.get<unknown>(BUILD_APPROVED_KEY);
    const packagesStored = this.deps.state.get<unknown>(PACKAGES_APPROVED_KEY);
    const facts: SandboxFacts = {
      setting: s.backend,
      configuredImage: s.image,
      choice,
      trusted,
      approval: typeof stored === 'boolean' ? stored : undefined,
      packages: s.pythonPackages,
      // An Install answered one list: another list is asked again.
      packagesApproval: packagesStored === packagesKey(s.pythonPackages) ? true : this.packagesDeclined.has(packagesKey(s.pythonPackages)) ? false : undefined,
    };
    if (!folder || !needsDevcontainerImage(facts)) return { facts, folder };
    const plan = await this.devcontainer.plan(this.current().docker, folder);
    return { facts: { ...facts, devcontainerImage: { tag: plan.tag, present: plan.present } }, folder };
  }

  /** The one place a decision turns into effects: the question, the build, the refusal. */
  private async carryOut(decision: SandboxDecision, call: CallContext): Promise<{ choice: BackendChoice; image: string; packagesSetting?: string }> {
    if ('note' in decision && decision.note && !this.noted.has(decision.note)) {
      this.noted.add(decision.note);
      this.deps.log.warn(decision.note);
    }
    switch (decision.kind) {
      case 'configured':
      case 'present':
        return { choice: decision.choice, image: decision.image };
      case 'data':
        return { choice: decision.choice, image: await this.data.image(this.current().docker, decision.requirements, call.signal), packagesSetting: PACKAGES_SETTING };
      case 'ask-packages': {
        const answer = await this.deps.ui.askModal(packagesQuestion(decision.requirements), PACKAGES_ANSWER.install, PACKAGES_ANSWER.decline);
        const approved = answer === PACKAGES_ANSWER.install;
        // Install is kept with its list; Not Now holds for this window; a dismissed question is no answer.
        if (approved) await this.approvePackages(decision.requirements);
        else if (answer === PACKAGES_ANSWER.decline) this.packagesDeclined.add(packagesKey(decision.requirements));
        return this.carryOut(decideAfterPackagesAnswer(decision, approved), call);
      }
      case 'refuse':
        throw new ToolError(decision.code, decision.message);
      case 'ask': {
        const answer = await this.deps.ui.askModal(buildQuestion(decision.configFile), BUILD_ANSWER.build, BUILD_ANSWER.decline);
        const approved = answer === BUILD_ANSWER.build;
        // A button is an answer, kept; a dismissed question (Escape) is not: this call goes without, the next asks.
        if (answer !== undefined) await this.deps.state.update(BUILD_APPROVED_KEY, approved);
        return this.carryOut(decideAfterAnswer(call.facts, decision, approved), call);
      }
      case 'build':
        // chooseBackend picks the devcontainer backend only with a folder open.
        if (!call.folder) throw new Error('a Dev Container build without a workspace folder');
        return { choice: decision.choice, image: await this.build(call.folder, call.settings, call.signal) };
    }
  }

  private async approvePackages(requirements: readonly string[]): Promise<void> {
    this.packagesDeclined.delete(packagesKey(requirements));
    await this.deps.state.update(PACKAGES_APPROVED_KEY, packagesKey(requirements));
  }

  /** Builds with a cancellable progress notification; either it or the call's `signal` stops the build. */
  private build(folder: string, s: Settings, signal: AbortSignal | undefined, force = false): Promise<string> {
    const docker = this.current().docker;
    return this.deps.ui.withProgress('CodeAct Sandbox: building the Dev Container image', async (report, notification) => {
      const built = await this.devcontainer.ensure({
        docker,
        workspaceFolder: folder,
        log: this.deps.log,
        signal: signal ? AbortSignal.any([signal, notification]) : notification,
        onProgress: (message) => report({ message }),
        ...(force ? { force } : {}),
        timeoutMs: s.devcontainerBuildTimeoutMinutes * 60_000,
        ...(this.engine ? { engine: this.engine } : {}),
        logHint: 'the "CodeAct Sandbox" output channel',
      });
      return built.image;
    });
  }

  private specOf(s: Settings, image: string, packagesSetting?: string): SandboxSpec {
    const { policy } = networkOf(s, CONFIG_SECTION);
    const testing = policy && this.deps.testInternetFile ? proxyTesting(this.deps.testInternetFile) : undefined;
    const credentials = policy && this.deps.credentials ? this.deps.credentials(credentialsOf(s, policy, CONFIG_SECTION).bindings) : undefined;
    return {
      image,
      limits: sandboxLimitsOf(s),
      warmRunner: s.warmRunner,
      preloadModules: s.preloadModules,
      preloadWhen: s.preloadWhen,
      runtime: s.runtime,
      ...(packagesSetting ? { packagesSetting } : {}),
      ...(policy ? { network: { policy, ...(testing ? { testing } : {}), ...(credentials ? { credentials } : {}) } } : {}),
    };
  }

  private onBuilding(building: boolean): void {
    if (building) {
      const view = buildingView();
      this.status.show(view.text, view.tooltip);
    } else if (this.choice && this.image) {
      this.showStatus(this.choice, this.image);
    }
  }

  private showStatus(choice: BackendChoice, image: string, again = false): void {
    if (!again && (this.choice?.reason !== choice.reason || this.image !== image)) {
      this.deps.log.info(`sandbox backend ${choice.reason}; image ${image}`);
    }
    this.choice = choice;
    this.image = image;
    // Another image was chosen: what the view said of the missing one is over.
    if (this.missingImage !== undefined && this.missingImage !== image) {
      this.missingImage = undefined;
      this.deps.ui.setContext(IMAGE_STATE_CONTEXT, 'ok');
    }
    // The engine's trouble stays in view until it is over.
    if (this.data.building || (this.engineState.state !== undefined && this.engineState.state !== 'ok')) return;
    const view = statusView({ choice, image, engine: engineView(this.engine, this.engineCheck.identity), ...(this.runtime ? { runtime: this.runtime } : {}) });
    this.status.show(view.text, view.tooltip);
  }
}
