/**
 * `run`: one program through the execute_code pipeline, printed as the model would read it. In
 * this process, or in a kept session's keeper (keeper.ts), which hands its own provider and
 * output.
 */
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { DEFAULTS } from '../core/limits';
import type { Logger } from '../core/logger';
import { connectionLine, networkSummary } from '../core/network';
import { SessionStates } from '../core/state';
import { executeToolCall } from '../core/toolCall';
import { parseToolInput } from '../core/toolInput';
import { currentOwner, type DockerSandboxProvider, type LockAhead } from '../docker';
import { ArtifactStore } from '../storage/artifactStore';
import { RunRecording } from '../storage/runRecorder';
import { folderSource } from '../storage/workspaceFolder';
import { createSandboxProvider, toolCallOptions, type ProviderWiring } from '../standalone/pipeline';
import { VERSION } from '../version';
import { keepSeconds } from './keeperLink';
import { UsageError, cliSessionKey, number, one, type Parsed } from './options';
import { readProgram } from './programFile';
import { processOutput, type CliOutput } from './report';
import { sandboxConfigFrom, type CliSandboxConfig } from './sandboxConfig';
import { startSpareMaker } from './spareMaker';

/** What a run is given beside its options. */
export interface RunContext {
  output?: CliOutput;
  /** The program, already read (main.ts asked a keeper first, and standard input is read once). */
  code?: string;
  /** The lock of the session's sandbox, asked for as the process started (main.ts). */
  ahead?: LockAhead;
  /** In a keeper: its provider, the session's states and the caller's cancel, kept from run to run. */
  kept?: { provider: DockerSandboxProvider; states: SessionStates; signal: AbortSignal };
}

/**
 * How a run's provider is made, in this process or in a keeper (which holds the session's lock):
 * a run on a --session keeps spares for the next new session, made by a process of its own.
 */
export function runWiring(p: Parsed, config: { workspace: string | undefined; log: Logger; credentials?: unknown }, extra: Partial<ProviderWiring>): ProviderWiring {
  const session = one(p, 'session');
  const spares = number(p, 'spares', DEFAULTS.spareSandboxes, 0, 8);
  return {
    owner: currentOwner('cli', VERSION),
    workspaceFolder: () => config.workspace,
    idleMs: 0,
    adoptExisting: session !== undefined,
    buildLogHint: 'the build output printed below (all of it with --verbose)',
    // A run without --session keeps nothing, so there is no next session of its own to keep a spare for.
    // Nor is one made with credentials: a maker is a process of its own, and the values are this one's.
    spareSandboxes: session === undefined || config.credentials ? 0 : spares,
    // Made by a process of its own: a run exits once the result is printed.
    spareMaker: (spec) => startSpareMaker(p, spec, config.log),
    ...extra,
  };
}

/** The usage errors of a run of `p` with `config` (sandboxConfigFrom's), said before anything runs. */
export function checkRun(p: Parsed, config: CliSandboxConfig): void {
  const { workspace, artifacts } = config;
  number(p, 'spares', DEFAULTS.spareSandboxes, 0, 8);
  if (keepSeconds(p) === undefined) throw new UsageError('--keep-seconds must be a number from 0 to 3600');
  const outputNames = p.flags.get('output') ?? [];
  if ((p.flags.get('file') ?? []).length > 0 && workspace === undefined) throw new UsageError('--file needs --workspace DIR');
  if ((outputNames.length > 0 || config.outputsMode === 'manifest') && artifacts === undefined) {
    throw new UsageError('saving files (--output, --outputs manifest) needs --artifacts DIR');
  }
  if (config.backend === 'devcontainer' && workspace === undefined) throw new UsageError('--backend devcontainer needs --workspace DIR');
  if (config.state === 'session' && one(p, 'session') === undefined) throw new UsageError('--state session keeps a state for the next run of a --session: give --session KEY');
  if (p.flags.has('reset') && config.state !== 'session') throw new UsageError('--reset applies to --state session');
}

export async function run(p: Parsed, ctx: RunContext = {}): Promise<number> {
  const output = ctx.output ?? processOutput;
  if (p.positional.length !== 1) throw new UsageError('run needs exactly one PROGRAM.py (or - for stdin)');
  if (p.flags.has('idle-minutes')) throw new UsageError('--idle-minutes is an option of mcp');
  const config = sandboxConfigFrom(p, output);
  const { log, workspace, artifacts } = config;
  const session = one(p, 'session');
  checkRun(p, config);
  const fileNames = p.flags.get('file') ?? [];
  const outputNames = p.flags.get('output') ?? [];
  const input = parseToolInput({
    code: ctx.code ?? (await readProgram(p.positional[0]!)),
    ...(fileNames.length ? { files: fileNames } : {}),
    ...(outputNames.length ? { outputs: outputNames } : {}),
    ...(p.flags.has('reset') ? { reset: true } : {}),
  });

  const sessionKey = cliSessionKey(session ?? `once-${randomBytes(6).toString('hex')}`);
  const provider = ctx.kept?.provider ?? createSandboxProvider(config, runWiring(p, config, ctx.ahead ? { lockAhead: ctx.ahead } : {}));
  const recording = artifacts === undefined ? undefined : new RunRecording(new ArtifactStore(path.resolve(artifacts)), sessionKey);
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  if (ctx.kept) {
    ctx.kept.signal.addEventListener('abort', onSignal, { once: true });
    if (ctx.kept.signal.aborted) onSignal();
  } else {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
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
        // A run of its own knows no state before it (the runner's word is all there is); a keeper
        // knows those of the runs it ran.
        states: ctx.kept?.states ?? new SessionStates(),
      }),
      abort.signal,
    );
    output.out(report.text + '\n');
    if (report.network && p.flags.has('verbose')) {
      output.err(`${networkSummary(report.network)}\n${report.network.connections.map((c) => `  ${connectionLine(c)}\n`).join('')}`);
    }
    if (recording?.begun && files.length > 0) output.err(`saved ${files.length} file(s) in ${recording.begun.filesDir}\n`);
    return 0;
  } finally {
    if (ctx.kept) {
      ctx.kept.signal.removeEventListener('abort', onSignal);
    } else {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      if (session === undefined) await provider.dispose();
      else await provider.detachAll();
      ctx.ahead?.cancel();
    }
  }
}

