/**
 * The execute_code pipeline outside VS Code, wired once for every host that runs it from a
 * process of its own (the CLI's `run`, the MCP server): the engine and the sandbox provider on it,
 * the image (or the Dev Container build), and the options of one call.
 */
import type { WorkspaceSource } from '../core/files/filesIn';
import { DEFAULTS, type SandboxLimits } from '../core/limits';
import type { Logger } from '../core/logger';
import type { NetworkPolicy } from '../core/network';
import type { SandboxCredentials } from '../core/credentials';
import type { PreloadWhen } from '../core/runnerProtocol';
import { filesInCapsOf, filesOutCapsOf, readSettings } from '../core/settings';
import type { SessionStates, StateMode } from '../core/state';
import type { OutputsMode, ToolCallOptions } from '../core/toolCall';
import {
  DockerSandboxProvider,
  chooseBackend,
  aheadOnEngine,
  createDockerClient,
  ensureDataImage,
  ensureDevcontainerImage,
  ensurePackagesImage,
  findDataImage,
  findPackagesImage,
  type BackendSetting,
  type BuildProgress,
  type DataImage,
  type EngineTarget,
  type LockAhead,
  type Owner,
  type SandboxSpec,
  type PackagesImage,
} from '../docker';
import type { RunRecording } from '../storage/runRecorder';

/** What the command line says about the sandbox, shared by `run` and `mcp`. */
export interface SandboxConfig {
  /** Empty: the data image, built when missing, with `packages` layered on it. */
  image: string;
  /** pip requirements for the data image (--packages); not for a chosen --image or a Dev Container. */
  packages: string[];
  limits: SandboxLimits;
  warmRunner: boolean;
  preloadModules: string[];
  preloadWhen: PreloadWhen;
  /** `auto` or a runtime the engine must have (--runtime). */
  runtime: string;
  /** The domains programs may reach (--allow-domain, --deny-domain); unset: no network. */
  network?: NetworkPolicy;
  /** Credentials the proxy adds for bound hosts (--credentials, --secret); only with a network. */
  credentials?: SandboxCredentials;
  timeoutSeconds: number;
  outputBudgetBytes: number;
  outputsMode: OutputsMode;
  /** session: a session's calls share the module globals its successful calls left (--state). */
  state: StateMode;
  backend: BackendSetting;
  /** Build the Dev Container image even when it is up to date (the first build of the process). */
  rebuild: boolean;
  engine: EngineTarget;
  log: Logger;
}

export interface ProviderWiring {
  owner: Owner;
  /** The folder whose Dev Container configuration counts, read at every sandbox request. */
  workspaceFolder: () => string | undefined;
  idleMs: number;
  adoptExisting: boolean;
  /** Where the user finds a failed build's output, for the model-facing sentence. */
  buildLogHint: string;
  /** Sandboxes kept warm with no session for the next new one (ProviderOptions.spareSandboxes); unset: none. */
  spareSandboxes?: number;
  /** Who makes the engine's spares (ProviderOptions.spareMaker); unset: the provider. */
  spareMaker?: (spec: SandboxSpec) => void;
  /** The session sandbox's lock asked for as the process started; used only if asked on this config's engine. */
  lockAhead?: LockAhead;
  /** A session's lock held from call to call (ProviderOptions.keepLock). */
  keepLock?: boolean;
}

export function createSandboxProvider(config: SandboxConfig, wiring: ProviderWiring): DockerSandboxProvider {
  const { engine, log } = config;
  const docker = createDockerClient(engine);
  const lockAhead = wiring.lockAhead && aheadOnEngine(wiring.lockAhead, engine) ? wiring.lockAhead : undefined;
  if (wiring.lockAhead && !lockAhead) wiring.lockAhead.cancel();
  const base = {
    limits: config.limits,
    warmRunner: config.warmRunner,
    preloadModules: config.preloadModules,
    preloadWhen: config.preloadWhen,
    runtime: config.runtime,
    ...(config.network ? { network: { policy: config.network, ...(config.credentials ? { credentials: config.credentials } : {}) } } : {}),
  };
  let force = config.rebuild;
  let lastReason: string | undefined;
  let noted = false;
  const dockerSpec = async (signal: AbortSignal) =>
    config.image ? { image: config.image, ...base } : { image: (await dataImage(config, docker, signal)).image.tag, packagesSetting: '--packages', ...base };
  return new DockerSandboxProvider({
    docker,
    owner: wiring.owner,
    runtimeSettingHint: '--runtime',
    // Pre-warming (the MCP server's, at connect) never builds or pulls: an --image only when the
    // engine has it (the provider checks), the data image only once it is built.
    prewarmSpec: async () => {
      if (config.backend !== 'docker') return undefined;
      if (config.image) return { image: config.image, ...base };
      const found = await findDataImage(docker);
      const image = found && (await findPackagesImage(docker, found, config.packages).catch(() => undefined));
      return image ? { image: image.tag, packagesSetting: '--packages', ...base } : undefined;
    },
    spec: async (signal) => {
      const folder = wiring.workspaceFolder();
      // The user named the folder (--workspace) or opened it in their client, and chose the
      // backend on the command line: that is the trust decision.
      const choice = await chooseBackend({ setting: config.backend, workspaceFolder: folder, trusted: true, settingHint: '--backend' });
      if (choice.reason !== lastReason) log.info(`backend ${choice.reason}; engine ${engine.description}`);
      lastReason = choice.reason;
      if (choice.backend === 'docker' || folder === undefined) return dockerSpec(signal);
      if (config.packages.length && !noted) log.warn(`--packages does not apply to the Dev Container backend (its image is the workspace's own)`);
      noted = true;
      const built = await ensureDevcontainerImage({ docker, engine, workspaceFolder: folder, log, signal, force, logHint: wiring.buildLogHint });
      force = false;
      log.info(`Dev Container image ${built.image} ${built.built ? 'built' : 'up to date'}`);
      return { image: built.image, ...base };
    },
    imageSettingHint: 'a different --image',
    log,
    idleMs: wiring.idleMs,
    adoptExisting: wiring.adoptExisting,
    spareSandboxes: wiring.spareSandboxes ?? 0,
    ...(wiring.spareMaker ? { spareMaker: wiring.spareMaker } : {}),
    ...(lockAhead ? { lockAhead } : {}),
    ...(wiring.keepLock ? { keepLock: true } : {}),
  });
}

/** How the CLI's sentences name what its user can act on. */
const CLI_HINTS = {
  imageSetting: '--image',
  prepare: '"codeact-sandbox prepare"',
  log: 'the build output (all of it with --verbose)',
  packagesSetting: '--packages',
};

/**
 * The data image with the packages of --packages on it: found, else built (network during the
 * build only). Build progress goes to stderr: a first build takes minutes.
 */
export async function dataImage(
  config: Pick<SandboxConfig, 'packages' | 'log'>,
  docker: ReturnType<typeof createDockerClient>,
  signal?: AbortSignal,
): Promise<{ base: DataImage; image: PackagesImage }> {
  const onProgress = progressPrinter();
  const common = { docker, log: config.log, onProgress, hints: CLI_HINTS, ...(signal ? { signal } : {}) };
  const base = await ensureDataImage(common);
  const image = await ensurePackagesImage({ ...common, base, requirements: config.packages });
  return { base, image };
}

/** One line per phase and per tenth of it, so a long build shows it is alive without flooding. */
function progressPrinter(): (p: BuildProgress) => void {
  let last = '';
  return (p) => {
    const key = `${p.phase}:${p.fraction === undefined ? '' : Math.floor(p.fraction * 10)}`;
    if (key === last) return;
    last = key;
    process.stderr.write(`[build] ${p.message}\n`);
  };
}

export interface CallWiring {
  sessionKey: string;
  /** The file store of this call, undefined when there is none. */
  workspace: WorkspaceSource | undefined;
  /** Without one, nothing is kept and no files can be saved. */
  recording: RunRecording | undefined;
  /** Where produced files end up, phrased for the model ("in the CodeAct Sandbox view"). */
  savedWhere: string;
  /** The host's record of its sessions' states, used when `state` is session. */
  states: SessionStates;
}

export function toolCallOptions(config: SandboxConfig, call: CallWiring): ToolCallOptions {
  // The caps users get by default in VS Code.
  const defaults = readSettings(() => undefined).settings;
  return {
    sessionKey: call.sessionKey,
    limits: { timeoutMs: config.timeoutSeconds * 1000, outputBudgetBytes: config.outputBudgetBytes, maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024 },
    memoryMb: config.limits.memoryMb,
    filesIn: { source: call.workspace, caps: filesInCapsOf(defaults) },
    filesOut: { mode: config.outputsMode, caps: filesOutCapsOf(defaults), savedWhere: call.savedWhere },
    ...(call.recording ? { record: call.recording.record } : {}),
    ...(config.state === 'session' ? { states: call.states, ...(call.recording ? { stateRuns: call.recording.stateRuns } : {}) } : {}),
    networkAllowSetting: '--allow-domain',
  };
}
