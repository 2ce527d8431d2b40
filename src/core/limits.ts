import { DEFAULT_DENY_GLOBS } from './files/names';
import type { PreloadWhen } from './runnerProtocol';

/** Defaults shared by the settings schema, the CLI and the tests: one place, one value. */
export const DEFAULTS = {
  /** Empty: the data image (numpy, pandas, matplotlib, ...) built on the user's engine; else exactly this image. */
  image: '',
  /** pip requirements installed on top of the data image, in an image derived from it. */
  pythonPackages: [] as readonly string[],
  timeoutSeconds: 120,
  memoryMb: 1024,
  cpus: 1,
  pidsLimit: 256,
  workAreaMb: 512,
  /** Copilot moves tool results larger than about 8 KB out of the prompt; stay under that. */
  outputBudgetBytes: 7800,
  /** A program that prints more than this in total is stopped: nobody reads it, and it costs the engine. */
  maxOutputMb: 64,
  idleMinutes: 15,
  /** Sandboxes kept created and warm with no session, for the next new session's first call. */
  spareSandboxes: 1,
  /** Most sandboxes at once, spares included; past it the least recently used idle one goes. */
  maxSandboxes: 8,
  confirmBeforeRun: false,
  runCard: true,
  outputsMode: 'declared',
  filesInMaxFiles: 20,
  filesInMaxFileMb: 100,
  filesInMaxTotalMb: 200,
  filesOutMaxFiles: 20,
  filesOutMaxFileMb: 50,
  filesOutMaxTotalMb: 100,
  denyGlobs: DEFAULT_DENY_GLOBS,
  attachImages: true,
  attachImageMaxKb: 1024,
  artifactsBudgetMb: 1024,
  /** Programs are forked from a warm interpreter inside the sandbox instead of started by `docker exec`. */
  warmRunner: true,
  /** Imported by that interpreter (when preloadWhen says); modules the image lacks are skipped. */
  preloadModules: ['numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot', 'scipy', 'PIL.Image', 'openpyxl'],
  /**
   * used: a sandbox preloads a module once one of its programs imported it, so a chat that never
   * imports pandas does not make every call's fork pay for pandas' pages; start: before the first program.
   */
  preloadWhen: 'used' as PreloadWhen,
  /** docker: the image setting; devcontainer: built from the workspace; auto: devcontainer when there is one. */
  backend: 'auto',
  /** Empty: the dockerContext setting, else DOCKER_HOST, else DOCKER_CONTEXT, else the docker CLI's current context, else the local engine. */
  dockerHost: '',
  /** A docker CLI context by name (`docker context ls`); empty: as the docker CLI decides. */
  dockerContext: '',
  dockerCertPath: '',
  dockerTlsVerify: false,
  devcontainerBuildTimeoutMinutes: 15,
  /** auto: gVisor's runsc where the engine has it, else the engine's default; or a runtime the engine must have. */
  runtime: 'auto',
  /** fresh: a new process per call; session: a chat's calls share the module globals its successful calls left. */
  state: 'fresh',
  /** Domains programs may reach through the sandbox's proxy; empty: no network at all. */
  'network.allow': [] as readonly string[],
  /** Domains refused even when the allow-list matches them. */
  'network.deny': [] as readonly string[],
  /** Credentials the proxy adds for bound hosts (core/credentials); only the user's own settings count. */
  credentials: [] as readonly Record<string, unknown>[],
} as const;

export interface FilesOutCaps {
  maxFiles: number;
  maxFileBytes: number;
  maxTotalBytes: number;
}

export interface SandboxLimits {
  memoryMb: number;
  cpus: number;
  pidsLimit: number;
  workAreaMb: number;
}

export interface RunLimits {
  timeoutMs: number;
  outputBudgetBytes: number;
  maxOutputBytes: number;
}

/** Longest program source accepted, in characters; far above anything a model writes in one call. */
export const MAX_CODE_CHARS = 200_000;
