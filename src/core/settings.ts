import { z } from 'zod';
import { DEFAULTS, type FilesOutCaps, type RunLimits, type SandboxLimits } from './limits';
import { MAX_REQUIREMENT_LENGTH, requirementName } from './requirements';
import { domainLists, networkPolicy, type NetworkPolicy } from './network';
import { parseBindings, reachableBindings, type ParsedBindings, type WrittenBinding } from './credentials';
import { PRELOAD_WHEN, preloadModuleSchema } from './runnerProtocol';

/**
 * The extension's settings (section `codeactSandbox`), validated. package.json's
 * `contributes.configuration` is checked against this by a unit test (defaults and bounds).
 */
export const settingsShape = {
  /** Empty: the data image the extension builds; else exactly this image. */
  image: z.string().trim().max(512).regex(/^[^\s]*$/, 'must be an image reference without spaces'),
  /** pip requirements layered on the data image (never on a chosen image or a Dev Container). */
  pythonPackages: z
    .array(
      z
        .string()
        .trim()
        .max(MAX_REQUIREMENT_LENGTH)
        .refine((r) => requirementName(r) !== undefined, 'each entry must be a pip requirement: a package name, optionally with a version ("requests==2.32.3")'),
    )
    .max(100),
  timeoutSeconds: z.number().int().min(1).max(3600),
  memoryMb: z.number().int().min(64).max(65536),
  cpus: z.number().min(0.1).max(64),
  pidsLimit: z.number().int().min(16).max(4096),
  workAreaMb: z.number().int().min(16).max(16384),
  outputBudgetBytes: z.number().int().min(500).max(100000),
  idleMinutes: z.number().int().min(0).max(1440),
  spareSandboxes: z.number().int().min(0).max(8),
  maxSandboxes: z.number().int().min(1).max(256),
  confirmBeforeRun: z.boolean(),
  /** Show each run as a card in the chat (an MCP App), where VS Code renders them; else the plain tool. */
  runCard: z.boolean(),
  outputsMode: z.enum(['declared', 'manifest']),
  filesInMaxFiles: z.number().int().min(0).max(1000),
  filesInMaxFileMb: z.number().min(0).max(4096),
  filesInMaxTotalMb: z.number().min(0).max(16384),
  filesOutMaxFiles: z.number().int().min(0).max(1000),
  filesOutMaxFileMb: z.number().min(0).max(4096),
  filesOutMaxTotalMb: z.number().min(0).max(16384),
  denyGlobs: z.array(z.string().min(1).max(512)).max(500),
  attachImages: z.boolean(),
  attachImageMaxKb: z.number().int().min(0).max(20480),
  artifactsBudgetMb: z.number().int().min(10).max(1048576),
  warmRunner: z.boolean(),
  preloadModules: z.array(preloadModuleSchema).max(100),
  preloadWhen: z.enum(PRELOAD_WHEN),
  backend: z.enum(['docker', 'devcontainer', 'auto']),
  dockerHost: z.string().trim().max(2048),
  // The docker CLI's rule for context names; empty: DOCKER_HOST, DOCKER_CONTEXT, the CLI's current context.
  dockerContext: z.string().trim().max(256).regex(/^(?:[a-zA-Z0-9][a-zA-Z0-9_.+-]+)?$/, 'must be a Docker context name, as `docker context ls` lists it'),
  dockerCertPath: z.string().trim().max(4096),
  dockerTlsVerify: z.boolean(),
  devcontainerBuildTimeoutMinutes: z.number().int().min(1).max(240),
  runtime: z.string().trim().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be auto or the name of a runtime the Docker engine has'),
  state: z.enum(['fresh', 'session']),
  // Each entry is checked as a domain pattern by networkOf (a bad one is reported and dropped, never widened).
  'network.allow': z.array(z.string().max(300)).max(200),
  'network.deny': z.array(z.string().max(300)).max(200),
  // Each entry is checked as a binding by credentialsOf (a bad one is reported and dropped, never widened).
  credentials: z.array(z.record(z.string(), z.unknown())).max(50),
} as const;

export type SettingKey = keyof typeof settingsShape;
export type Settings = { [K in SettingKey]: z.infer<(typeof settingsShape)[K]> };

export const SETTING_KEYS = Object.keys(settingsShape) as SettingKey[];

export interface SettingsReading {
  settings: Settings;
  /** One sentence per invalid value; the default was used instead. */
  problems: string[];
}

/**
 * Reads each setting through `get`; a value that fails validation is reported and replaced by
 * its default, so one bad value never disables the tool.
 */
export function readSettings(get: (key: SettingKey) => unknown, section = 'codeactSandbox'): SettingsReading {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const key of SETTING_KEYS) {
    const raw = get(key);
    if (raw === undefined || raw === null) {
      out[key] = DEFAULTS[key];
      continue;
    }
    const parsed = settingsShape[key].safeParse(raw);
    if (parsed.success) {
      out[key] = parsed.data;
    } else {
      out[key] = DEFAULTS[key];
      const why = parsed.error.issues[0]?.message ?? 'invalid';
      const fallback = DEFAULTS[key] === '' ? 'the default (empty)' : JSON.stringify(DEFAULTS[key]);
      problems.push(`${section}.${key} = ${JSON.stringify(raw)} is not valid (${why}); using ${fallback}.`);
    }
  }
  const settings = out as Settings;
  const network = networkOf(settings, section);
  problems.push(...network.problems, ...credentialsOf(settings, network.policy, section).problems);
  return { settings, problems };
}

/**
 * The credential bindings the settings give, each of whose hosts the network policy lets programs
 * reach, and a sentence per binding dropped. None without a network.
 */
export function credentialsOf(s: Pick<Settings, 'credentials'>, policy: NetworkPolicy | undefined, section = 'codeactSandbox'): ParsedBindings {
  if (s.credentials.length === 0) return { bindings: [], problems: [] };
  const parsed = parseBindings(s.credentials as WrittenBinding[], `${section}.credentials`);
  if (!policy) return { bindings: [], problems: [...parsed.problems, `${section}.credentials binds secrets, but ${section}.network.allow lets programs reach no host; the bindings are ignored.`] };
  const reachable = reachableBindings(parsed.bindings, domainLists(policy.allow, policy.deny), `${section}.network.allow`);
  return { bindings: reachable.bindings, problems: [...parsed.problems, ...reachable.problems] };
}

/** The network policy the settings give (undefined: no network), and a sentence per pattern dropped. */
export function networkOf(s: Pick<Settings, 'network.allow' | 'network.deny'>, section = 'codeactSandbox'): { policy: NetworkPolicy | undefined; problems: string[] } {
  return networkPolicy(s['network.allow'], s['network.deny'], { allow: `${section}.network.allow`, deny: `${section}.network.deny` });
}

export function sandboxLimitsOf(s: Settings): SandboxLimits {
  return { memoryMb: s.memoryMb, cpus: s.cpus, pidsLimit: s.pidsLimit, workAreaMb: s.workAreaMb };
}

const MB = 1024 * 1024;

export function filesOutCapsOf(s: Settings): FilesOutCaps {
  return { maxFiles: s.filesOutMaxFiles, maxFileBytes: Math.round(s.filesOutMaxFileMb * MB), maxTotalBytes: Math.round(s.filesOutMaxTotalMb * MB) };
}

export interface FilesInCaps {
  denyGlobs: readonly string[];
  maxFiles: number;
  maxFileBytes: number;
  maxTotalBytes: number;
}

export function filesInCapsOf(s: Settings): FilesInCaps {
  return {
    denyGlobs: s.denyGlobs,
    maxFiles: s.filesInMaxFiles,
    maxFileBytes: Math.round(s.filesInMaxFileMb * MB),
    maxTotalBytes: Math.round(s.filesInMaxTotalMb * MB),
  };
}

export function runLimitsOf(s: Settings): RunLimits {
  return {
    timeoutMs: s.timeoutSeconds * 1000,
    outputBudgetBytes: s.outputBudgetBytes,
    maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024,
  };
}
