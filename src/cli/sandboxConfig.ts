/**
 * The flags `run` and `mcp` share, read into the pipeline's configuration: the sandbox, its
 * limits, the backend and the engine (also read by `prepare`, `cleanup` and the keeper).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULTS } from '../core/limits';
import { consoleLogger } from '../core/logger';
import { networkPolicy } from '../core/network';
import { requirementName } from '../core/requirements';
import { PRELOAD_WHEN, preloadModuleSchema, type PreloadWhen } from '../core/runnerProtocol';
import { STATE_MODES, type StateMode } from '../core/state';
import { settingsShape } from '../core/settings';
import { BACKEND_SETTINGS, resolveEngine, type BackendSetting, type EngineTarget } from '../docker';
import type { SandboxConfig } from '../standalone/pipeline';
import { credentialsFrom } from './credentialFiles';
import { UsageError, number, one, type Parsed } from './options';
import { processOutput, type CliOutput } from './report';

/** The flags `run` and `mcp` share: the sandbox, its limits, the backend and the engine. */
/** A run's sandbox settings, with the folders the command line adds. */
export type CliSandboxConfig = SandboxConfig & { workspace: string | undefined; artifacts: string | undefined };

export function sandboxConfigFrom(p: Parsed, output: CliOutput = processOutput): CliSandboxConfig {
  const image = one(p, 'image') ?? DEFAULTS.image;
  const packages = packagesFrom(p);
  if (image && packages.length) throw new UsageError('--packages adds to the data image; it does not apply to an --image of your choice');
  const timeoutSeconds = number(p, 'timeout', DEFAULTS.timeoutSeconds, 1, 86_400);
  const limits = {
    memoryMb: number(p, 'memory', DEFAULTS.memoryMb, 64, 1_048_576),
    cpus: number(p, 'cpus', DEFAULTS.cpus, 0.1, 1024),
    pidsLimit: number(p, 'pids', DEFAULTS.pidsLimit, 16, 1_000_000),
    workAreaMb: number(p, 'work-area', DEFAULTS.workAreaMb, 16, 1_048_576),
  };
  const outputBudgetBytes = number(p, 'output-budget', DEFAULTS.outputBudgetBytes, 200, 10_000_000);
  const preload = (p.flags.get('preload') ?? [...DEFAULTS.preloadModules]).filter((m) => m !== '');
  const badModule = preload.find((m) => !preloadModuleSchema.safeParse(m).success);
  if (badModule !== undefined) throw new UsageError(`--preload ${badModule} is not a Python module name`);
  if (preload.length > 100) throw new UsageError('--preload names at most 100 modules');
  const preloadWhen = (one(p, 'preload-when') ?? DEFAULTS.preloadWhen) as PreloadWhen;
  if (!PRELOAD_WHEN.includes(preloadWhen)) throw new UsageError(`--preload-when must be ${PRELOAD_WHEN.join(' or ')}`);
  const workspace = one(p, 'workspace');
  const outputsMode = one(p, 'outputs') ?? 'declared';
  if (outputsMode !== 'declared' && outputsMode !== 'manifest') throw new UsageError('--outputs must be declared or manifest');
  const artifacts = one(p, 'artifacts');
  if (workspace !== undefined && !fs.statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) {
    throw new UsageError(`--workspace ${workspace} is not a folder`);
  }
  const backend = (one(p, 'backend') ?? 'docker') as BackendSetting;
  if (!BACKEND_SETTINGS.includes(backend)) throw new UsageError(`--backend must be ${BACKEND_SETTINGS.join(', ')}`);
  // A bad pattern is said and dropped, never widened; with none left, or a bad deny pattern, the sandbox has no network.
  const { policy: network, problems, denyInvalid } = networkPolicy(p.flags.get('allow-domain') ?? [], p.flags.get('deny-domain') ?? [], { allow: '--allow-domain', deny: '--deny-domain' });
  for (const problem of problems) output.err(`codeact-sandbox: ${problem}\n`);
  if (problems.length && !network && !denyInvalid && p.flags.has('allow-domain')) output.err('codeact-sandbox: no valid --allow-domain is left, so the sandbox has no network\n');
  const credentials = credentialsFrom(p, network, output);
  const state = (one(p, 'state') ?? DEFAULTS.state) as StateMode;
  if (!STATE_MODES.includes(state)) throw new UsageError(`--state must be ${STATE_MODES.join(' or ')}`);
  if (state === 'session' && p.flags.has('no-warm')) throw new UsageError('--state session needs the warm runner: a state lives in it (leave out --no-warm)');
  return {
    image,
    packages,
    limits,
    warmRunner: !p.flags.has('no-warm'),
    preloadModules: preload,
    preloadWhen,
    runtime: runtimeFrom(p),
    ...(network ? { network } : {}),
    ...(credentials ? { credentials } : {}),
    timeoutSeconds,
    outputBudgetBytes,
    outputsMode,
    state,
    backend,
    rebuild: p.flags.has('rebuild'),
    engine: engineFrom(p),
    log: consoleLogger(p.flags.has('verbose'), output.err),
    workspace,
    artifacts,
  };
}

/** --packages REQ (repeatable): plain pip requirements, checked before anything is built. */
export function packagesFrom(p: Parsed): string[] {
  const packages = p.flags.get('packages') ?? [];
  const bad = packages.find((r) => requirementName(r) === undefined);
  if (bad !== undefined) throw new UsageError(`--packages ${JSON.stringify(bad)} is not a pip requirement (a package name, optionally with a version: requests==2.32.3)`);
  return packages;
}

/** --runtime auto|NAME: the same rule as the codeactSandbox.runtime setting. */
function runtimeFrom(p: Parsed): string {
  const runtime = one(p, 'runtime') ?? DEFAULTS.runtime;
  if (!settingsShape.runtime.safeParse(runtime).success) throw new UsageError('--runtime must be auto or the name of a runtime the Docker engine has');
  return runtime;
}

/** --docker-host / --docker-cert-path / --docker-tls-verify / --context over DOCKER_HOST, DOCKER_CONTEXT and the rest, as the docker CLI. */
export function engineFrom(p: Parsed): EngineTarget {
  const host = one(p, 'docker-host');
  const certPath = one(p, 'docker-cert-path');
  const context = one(p, 'context');
  if (host !== undefined && context !== undefined) throw new UsageError('--docker-host and --context cannot be used together');
  return resolveEngine({
    ...(host !== undefined ? { host } : {}),
    ...(context !== undefined ? { context } : {}),
    origin: { host: '--docker-host', context: '--context' },
    ...(certPath !== undefined ? { certPath: path.resolve(certPath) } : {}),
    ...(p.flags.has('docker-tls-verify') ? { tlsVerify: true } : {}),
    hint: 'the --docker-host / --docker-cert-path options',
  });
}

