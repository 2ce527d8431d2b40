/**
 * The commands of the command line (main.ts loads this module only once a command is to run:
 * the usage and its errors need none of it).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULTS } from '../core/limits';
import { settingsShape } from '../core/settings';
import { requirementName } from '../core/requirements';
import { PRELOAD_WHEN, preloadModuleSchema, type PreloadWhen } from '../core/runnerProtocol';
import { consoleLogger } from '../core/logger';
import { connectionLine, networkPolicy, networkSummary } from '../core/network';
import { sessionDigest } from '../core/session';
import { STATE_MODES, SessionStates, type StateMode } from '../core/sessionState';
import { executeToolCall } from '../core/toolCall';
import { ArtifactStore } from '../storage/artifactStore';
import { RunRecording } from '../storage/runRecorder';
import { folderSource } from '../storage/workspaceFolder';
import { parseToolInput } from '../core/toolInput';
import {
  BACKEND_SETTINGS,
  DockerSandboxProvider,
  createDockerClient,
  currentOwner,
  processIsAlive,
  removeCliSandboxes,
  removeOrphanedSandboxes,
  resolveEngine,
  type BackendSetting,
  type EngineTarget,
  type LockAhead,
} from '../docker';
import { defaultArtifactsDir } from '../mcp/cacheDir';
import { createSandboxProvider, dataImage, toolCallOptions, type SandboxConfig } from '../standalone/pipeline';
import { VERSION } from '../version';
import { UsageError, cliSessionKey, number, one, type CommandName, type Parsed } from './options';
import { reportFailure } from './report';
import { MAKER_DEADLINE_MS, SPARE_MAKER_COMMAND, liveMakers, makerSpec, makersDir, makersEnded, noteMakerEnd, startSpareMaker } from './spareMaker';

async function readProgram(file: string): Promise<string> {
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? e}`);
  }
}

/** The flags `run` and `mcp` share: the sandbox, its limits, the backend and the engine. */
function sandboxConfigFrom(p: Parsed): SandboxConfig & { workspace: string | undefined; artifacts: string | undefined } {
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
  // A bad pattern is said and dropped, never widened; with none left, the sandbox has no network.
  const { policy: network, problems } = networkPolicy(p.flags.get('allow-domain') ?? [], p.flags.get('deny-domain') ?? [], { allow: '--allow-domain', deny: '--deny-domain' });
  for (const problem of problems) process.stderr.write(`codeact-sandbox: ${problem}\n`);
  if (problems.length && !network && p.flags.has('allow-domain')) process.stderr.write('codeact-sandbox: no valid --allow-domain is left, so the sandbox has no network\n');
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
    timeoutSeconds,
    outputBudgetBytes,
    outputsMode,
    state,
    backend,
    rebuild: p.flags.has('rebuild'),
    engine: engineFrom(p),
    log: consoleLogger(p.flags.has('verbose')),
    workspace,
    artifacts,
  };
}

/** --packages REQ (repeatable): plain pip requirements, checked before anything is built. */
function packagesFrom(p: Parsed): string[] {
  const packages = p.flags.get('packages') ?? [];
  const bad = packages.find((r) => requirementName(r) === undefined);
  if (bad !== undefined) throw new UsageError(`--packages ${JSON.stringify(bad)} is not a pip requirement (a package name, optionally with a version: requests==2.32.3)`);
  return packages;
}

/** Builds the data image (and --packages) ahead of the first run, and says what it did. */
async function prepare(p: Parsed): Promise<number> {
  if (p.positional.length > 0) throw new UsageError('prepare takes no PROGRAM.py');
  const log = consoleLogger(p.flags.has('verbose'));
  const docker = createDockerClient(engineFrom(p));
  const started = Date.now();
  const { base, image } = await dataImage({ packages: packagesFrom(p), log }, docker);
  const took = `${((Date.now() - started) / 1000).toFixed(1)} s`;
  const size = async (id: string) => `${((await docker.getImage(id).inspect()).Size / 1e9).toFixed(2)} GB`;
  process.stdout.write(`data image ${base.tag} (${base.route} route): ${base.built ? `built in ${took}` : 'already built'}, ${await size(base.id)}\n`);
  if (image.tag !== base.tag) process.stdout.write(`packages image ${image.tag} (${image.requirements.join(' ')}): ${image.built ? `built in ${took} with the data image` : 'already built'}\n`);
  return 0;
}

/** --runtime auto|NAME: the same rule as the codeactSandbox.runtime setting. */
function runtimeFrom(p: Parsed): string {
  const runtime = one(p, 'runtime') ?? DEFAULTS.runtime;
  if (!settingsShape.runtime.safeParse(runtime).success) throw new UsageError('--runtime must be auto or the name of a runtime the Docker engine has');
  return runtime;
}

async function run(p: Parsed, ahead?: LockAhead): Promise<number> {
  if (p.positional.length !== 1) throw new UsageError('run needs exactly one PROGRAM.py (or - for stdin)');
  if (p.flags.has('idle-minutes')) throw new UsageError('--idle-minutes is an option of mcp');
  const config = sandboxConfigFrom(p);
  const { log, workspace, artifacts } = config;
  const session = one(p, 'session');
  const spares = number(p, 'spares', DEFAULTS.spareSandboxes, 0, 8);
  const fileNames = p.flags.get('file') ?? [];
  const outputNames = p.flags.get('output') ?? [];
  if (fileNames.length > 0 && workspace === undefined) throw new UsageError('--file needs --workspace DIR');
  if ((outputNames.length > 0 || config.outputsMode === 'manifest') && artifacts === undefined) {
    throw new UsageError('saving files (--output, --outputs manifest) needs --artifacts DIR');
  }
  if (config.backend === 'devcontainer' && workspace === undefined) throw new UsageError('--backend devcontainer needs --workspace DIR');
  if (config.state === 'session' && session === undefined) throw new UsageError('--state session keeps a state for the next run of a --session: give --session KEY');
  if (p.flags.has('reset') && config.state !== 'session') throw new UsageError('--reset applies to --state session');
  const input = parseToolInput({
    code: await readProgram(p.positional[0]!),
    ...(fileNames.length ? { files: fileNames } : {}),
    ...(outputNames.length ? { outputs: outputNames } : {}),
    ...(p.flags.has('reset') ? { reset: true } : {}),
  });

  const sessionKey = cliSessionKey(session ?? `once-${randomBytes(6).toString('hex')}`);
  const provider = createSandboxProvider(config, {
    owner: currentOwner('cli', VERSION),
    workspaceFolder: () => workspace,
    idleMs: 0,
    adoptExisting: session !== undefined,
    // A run without --session keeps nothing, so there is no next session of its own to keep a spare for.
    spareSandboxes: session === undefined ? 0 : spares,
    // Made by a process of its own: this one exits once the result is printed.
    spareMaker: (spec) => startSpareMaker(p, spec, spares, log),
    buildLogHint: 'the build output printed below (all of it with --verbose)',
    ...(ahead ? { lockAhead: ahead } : {}),
  });
  const recording = artifacts === undefined ? undefined : new RunRecording(new ArtifactStore(path.resolve(artifacts)), sessionKey);
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const { report, files } = await executeToolCall(
      provider,
      log,
      input,
      // The same sentence as in VS Code: the CLI prints exactly what the model would read.
      toolCallOptions(config, {
        sessionKey,
        workspace: workspace === undefined ? undefined : folderSource(workspace),
        recording,
        savedWhere: 'in the CodeAct Sandbox view',
        // One run per process: a state lost between two runs is not known here (the runner's word is all there is).
        states: new SessionStates(),
      }),
      abort.signal,
    );
    process.stdout.write(report.text + '\n');
    if (report.network && p.flags.has('verbose')) {
      process.stderr.write(`${networkSummary(report.network)}\n${report.network.connections.map((c) => `  ${connectionLine(c)}\n`).join('')}`);
    }
    if (recording?.begun && files.length > 0) process.stderr.write(`saved ${files.length} file(s) in ${recording.begun.filesDir}\n`);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (session === undefined) await provider.dispose();
    else await provider.detachAll();
    ahead?.cancel();
  }
}

async function mcp(p: Parsed): Promise<number> {
  const notHere = {
    session: 'each connection gets a sandbox of its own',
    spares: 'each connection gets a sandbox of its own',
    file: 'the client names the files of each call',
    output: 'the client names the files of each call',
    reset: 'the client asks for it in a call (`reset`)',
  };
  for (const [name, why] of Object.entries(notHere)) {
    if (p.flags.has(name)) throw new UsageError(`--${name} is not an option of mcp: ${why}`);
  }
  if (p.positional.length > 0) throw new UsageError('mcp takes no PROGRAM.py: the client sends the programs');
  const config = sandboxConfigFrom(p);
  // The MCP SDK (and its JSON schema validator) is initialised only for this command.
  const { serveMcp } = await import('../mcp/serve');
  return serveMcp({ ...config, idleMinutes: number(p, 'idle-minutes', DEFAULTS.idleMinutes, 0, 1440) });
}

/** --docker-host / --docker-cert-path / --docker-tls-verify / --context over DOCKER_HOST, DOCKER_CONTEXT and the rest, as the docker CLI. */
function engineFrom(p: Parsed): EngineTarget {
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

async function exportCommand(p: Parsed): Promise<number> {
  if (p.positional.length > 0) throw new UsageError('export takes no PROGRAM.py');
  const session = one(p, 'session');
  if (session === undefined) throw new UsageError('export needs --session KEY: the session whose runs become the notebook');
  const store = new ArtifactStore(path.resolve(one(p, 'artifacts') ?? defaultArtifactsDir()));
  const out = one(p, 'out');
  const { exportNotebook } = await import('../standalone/exportNotebook');
  const result = await exportNotebook(store, { session, keptStateOnly: p.flags.has('kept-state-only'), out });
  if (result.written === undefined) process.stdout.write(result.text);
  else process.stderr.write(`wrote ${result.runs} run${result.runs === 1 ? '' : 's'} to ${result.written}\n`);
  return 0;
}

async function cleanup(p: Parsed): Promise<number> {
  const session = one(p, 'session');
  const log = consoleLogger(p.flags.has('verbose'));
  const docker = createDockerClient(engineFrom(p));
  // A spare being made now would outlive this cleanup.
  if (session === undefined) {
    const makers = liveMakers(makersDir(), processIsAlive);
    if (makers.length > 0) log.info(`waiting for ${makers.length} spare maker(s) to end (process ${makers.join(', ')})`);
    await makersEnded(makersDir(), processIsAlive);
  }
  let n = await removeCliSandboxes(docker, log, session === undefined ? undefined : sessionDigest(`cli:${session}`));
  // A live server's sandbox is in use; only those whose server process is gone are removed.
  if (session === undefined) n += await removeOrphanedSandboxes(docker, currentOwner('mcp', VERSION), log);
  process.stdout.write(`removed ${n} sandbox${n === 1 ? '' : 'es'}\n`);
  return 0;
}

/** The process `run` starts to make the next new session's spare (spareMaker.ts). */
async function makeSpares(p: Parsed): Promise<number> {
  noteMakerEnd();
  const spec = makerSpec();
  if (spec === undefined) throw new UsageError(`unknown command ${SPARE_MAKER_COMMAND}`);
  setTimeout(() => process.exit(1), MAKER_DEADLINE_MS).unref();
  const provider = new DockerSandboxProvider({
    docker: createDockerClient(engineFrom(p)),
    owner: currentOwner('cli', VERSION),
    spec: () => spec,
    imageSettingHint: '--image',
    log: consoleLogger(false),
    idleMs: 0,
    adoptExisting: true,
    spareSandboxes: number(p, 'spares', DEFAULTS.spareSandboxes, 0, 8),
  });
  await provider.fillSpares(spec);
  await provider.detachAll();
  return 0;
}

const COMMANDS: Record<CommandName, (p: Parsed, ahead?: LockAhead) => Promise<number>> = {
  run,
  mcp,
  cleanup,
  prepare,
  export: exportCommand,
  [SPARE_MAKER_COMMAND]: makeSpares,
};

/** Runs the command `p` names (main.ts checked it is one), and reports its failure. */
export async function runCommand(p: Parsed, ahead?: LockAhead): Promise<number> {
  try {
    return await COMMANDS[p.command as CommandName](p, ahead);
  } catch (e) {
    return reportFailure(e);
  }
}
