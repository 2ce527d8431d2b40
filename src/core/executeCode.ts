import * as fs from 'node:fs';
import * as path from 'node:path';
import { StreamCapture, type CapturedStream } from './capture';
import { ToolError, describeError, isToolError } from './errors';
import { formatBytes, formatResult, shownStreams } from './format';
import { MANIFEST_NAME, parseManifest } from './files/manifest';
import type { FilesOutCaps, RunLimits } from './limits';
import type { Logger } from './logger';
import { missingModuleHint, missingModuleName } from './missingModule';
import type { CollectedFile, CollectOutcome, OutputSink, Sandbox, SandboxProvider, StagedFile } from './sandbox';
import {
  replayNetwork,
  stateAfterProgram,
  stateBeforeCall,
  stateBeforeProgram,
  withoutNetwork,
  type ResumeOutcome,
  type SessionRequest,
  type StateOutcome,
  type StateRecord,
} from './state';
import { blockedNote, joinActivity, type NetworkActivity } from './network';

/** How produced files are named for collection: declared up front, or listed by the program. */
export type OutputsRequest = { mode: 'declared'; names: readonly string[] } | { mode: 'manifest' };

export interface FilesOutRequest {
  outputs: OutputsRequest;
  caps: FilesOutCaps;
  /** Stores one produced file (e.g. the artifact store's run writer). */
  sink: OutputSink;
  /** Where the user finds saved files, phrased for the model ("in the CodeAct Sandbox view"). */
  savedWhere: string;
}

/** outputs.json is small by nature; a larger one is refused unread. */
const MANIFEST_MAX_BYTES = 64 * 1024;

export interface ExecuteRequest {
  code: string;
  /** From the host's context (chat session, window, CLI --session); never from model input. */
  sessionKey: string;
  /** The sandbox's memory limit, named in the sentence when the program was OOM-killed. */
  memoryMb?: number;
  /** When set, streams too long for the model are kept whole here (stdout.txt, stderr.txt). */
  spillDir?: string;
  /** Workspace files placed in the call's directory (already validated against the listing). */
  files?: readonly StagedFile[];
  /** Produced files to collect after the run. */
  filesOut?: FilesOutRequest;
  /** Session mode: the call runs on the chat's kept state (an empty one with `reset`); `states` is the host's record of them. */
  state?: SessionRequest;
  /** How this user adds a name to the network allow-list, for the sentence about a blocked one. */
  networkAllowSetting?: string;
  /** Each piece of output as the program writes it (a live view: the run card), before any cut. */
  onOutput?: (stream: 'stdout' | 'stderr', chunk: Buffer) => void;
}

export interface ExecuteReport {
  /** Exactly what the model receives. */
  text: string;
  exitCode: number | null;
  timedOut: boolean;
  cancelled: boolean;
  outputLimited: boolean;
  durationMs: number;
  sandboxId: string;
  image: string;
  runtime?: string;
  /** The directory the program ran in, inside the sandbox. */
  workDir?: string;
  stdout: CapturedStream;
  stderr: CapturedStream;
  /** Each stream as the model saw it (cut to its share of the budget). */
  shown: { stdout: string; stderr: string };
  /** The kernel or the engine said the program was killed for memory. */
  oomKilled: boolean;
  /**
   * Session mode: the call started from an empty state, whether its state was kept, and the ids
   * of the state it started from and left (as the records know them: a rebuilt state by its
   * recorded id), so that the chain of kept runs can be followed later (resume).
   */
  state?: StateRecord;
  /** Session mode: how the chat's state was rebuilt before this call, when its sandbox was new. */
  resumed?: Exclude<ResumeOutcome, { kind: 'none' }>;
  /** Files holding the whole stream when it was cut for the model. */
  stdoutFile?: string;
  stderrFile?: string;
  /** Produced files that were saved. */
  files: CollectedFile[];
  startedAt: Date;
  /** A sandbox with a network: the program's connections, as the proxy saw them. */
  network?: NetworkActivity;
  /** The sentences after the streams in `text` (saved files, a missing module, the state line, ...). */
  notes: readonly string[];
  /** Declared outputs that were not saved, and why. */
  notSaved?: NotSaved[];
}

type StopReason = 'timeout' | 'cancel' | 'output';

/** Stops a run once, for the first reason given; the reason is the signal's. */
class Stopper {
  private readonly controller = new AbortController();
  readonly signal = this.controller.signal;

  stop(reason: StopReason): void {
    if (!this.signal.aborted) this.controller.abort(reason);
  }

  get reason(): StopReason | undefined {
    return this.signal.aborted ? (this.signal.reason as StopReason) : undefined;
  }
}

/** What one run in the sandbox gave: its exit, its captured streams, and what the sandbox said about it. */
interface RunOutcome {
  exitCode: number | null;
  workDir: string;
  notes: string[];
  replaced: boolean;
  oomKilled: boolean;
  stateOutcome: StateOutcome | undefined;
  network: NetworkActivity | undefined;
  stdout: StreamCapture;
  stderr: StreamCapture;
}

/**
 * One execute_code call: get the session's sandbox, run the program in a fresh directory with a
 * timeout, the caller's cancellation and an output ceiling, and phrase the result for the model.
 * Failures of the tool itself (no engine, no image) are thrown as ToolError; anything the
 * program does is a result.
 */
export async function executeCode(
  provider: SandboxProvider,
  log: Logger,
  request: ExecuteRequest,
  limits: RunLimits,
  signal?: AbortSignal,
): Promise<ExecuteReport> {
  if (signal?.aborted) throw new ToolError('cancelled', 'The run was cancelled before it started.');
  const started = Date.now();
  const stopper = new Stopper();
  const onCallerAbort = () => stopper.stop('cancel');
  signal?.addEventListener('abort', onCallerAbort, { once: true });

  let sandbox: Sandbox | undefined;
  try {
    sandbox = await provider.acquire(request.sessionKey, signal ?? stopper.signal).catch((e: unknown) => {
      if (signal?.aborted) throw new ToolError('cancelled', 'The run was cancelled before it started.', { cause: e });
      throw e;
    });
    const held = sandbox;
    const rebuild = { sessionKey: request.sessionKey, timeoutMs: limits.timeoutMs, signal: stopper.signal, log };
    let resumed = request.state ? await stateBeforeCall(held, request.state, rebuild) : ({ kind: 'none' } as const);
    // Found gone only as the program was to start (its link had not yet broken): rebuilt there.
    const rebuildState = async (): Promise<boolean> => {
      if (resumed.kind !== 'none' || !request.state) return false;
      resumed = await stateBeforeProgram(held, request.state, rebuild);
      return resumed.kind !== 'none';
    };
    const run = await runProgram(held, request, limits, stopper, log, resumed.kind === 'none' ? rebuildState : undefined);
    const after = await afterRun(held, request, run, stopper.reason, log, resumed);
    return report(held, request, limits, run, stopper.reason, after, started, log, resumed);
  } catch (e) {
    if (isToolError(e)) {
      log.warn(`execute_code failed (${e.code}): ${describeError(e)}`);
      throw e;
    }
    log.error(`execute_code failed: ${describeError(e)}`);
    throw new ToolError(
      'sandbox_failed',
      'The sandbox failed while running the program. Try again; if it keeps failing, tell the user.',
      { cause: e, seeLog: true },
    );
  } finally {
    signal?.removeEventListener('abort', onCallerAbort);
    await sandbox?.release?.().catch((e: unknown) => log.warn(`releasing the sandbox failed: ${describeError(e)}`));
  }
}

/** Runs the program with its timeout (from when it started) and output ceiling, capturing both streams. */
async function runProgram(
  sandbox: Sandbox,
  request: ExecuteRequest,
  limits: RunLimits,
  stopper: Stopper,
  log: Logger,
  /** Unset once the state was rebuilt (or tried) before the program. */
  rebuildState: (() => Promise<boolean>) | undefined,
): Promise<RunOutcome> {
  if (request.spillDir) fs.mkdirSync(request.spillDir, { recursive: true });
  const keep = limits.outputBudgetBytes;
  const stdout = new StreamCapture(keep, request.spillDir && path.join(request.spillDir, 'stdout.txt'));
  const stderr = new StreamCapture(keep, request.spillDir && path.join(request.spillDir, 'stderr.txt'));
  const checkFlood = () => {
    if (stdout.totalBytes + stderr.totalBytes > limits.maxOutputBytes) stopper.stop('output');
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    const exit = await sandbox.run({
      code: request.code,
      ...(request.files?.length ? { files: request.files } : {}),
      ...(request.state ? { state: { reset: request.state.reset } } : {}),
      ...(request.state?.resume && !request.state.reset ? (rebuildState ? { rebuildState } : { stateRebuilt: true }) : {}),
      signal: stopper.signal,
      onStart: () => {
        log.debug('the program started');
        clearTimeout(timer);
        timer = setTimeout(() => stopper.stop('timeout'), limits.timeoutMs);
      },
      onStdout: (chunk) => {
        stdout.write(chunk);
        request.onOutput?.('stdout', chunk);
        checkFlood();
      },
      onStderr: (chunk) => {
        stderr.write(chunk);
        request.onOutput?.('stderr', chunk);
        checkFlood();
      },
    });
    const notes = exit.notes ?? [];
    if (exit.replaced) {
      log.warn(`sandbox for ${request.sessionKey} was restarted to stop the program`);
      notes.push('The sandbox had to be restarted to stop the program; files written by earlier calls are gone.');
    }
    return {
      exitCode: exit.exitCode,
      workDir: exit.workDir,
      notes,
      replaced: exit.replaced === true,
      oomKilled: exit.oomKilled === true,
      stateOutcome: exit.state,
      network: exit.network,
      stdout,
      stderr,
    };
  } finally {
    clearTimeout(timer);
    await Promise.all([stdout.close(), stderr.close()]);
  }
}

/** What follows the program: the notes after its streams, the files saved, the state its record keeps. */
interface AfterRun {
  notes: string[];
  saved: CollectedFile[];
  notSaved?: NotSaved[];
  state?: StateRecord;
}

/** A file the program was to leave that was not saved, and why (for a view that lists them). */
export interface NotSaved {
  name: string;
  reason: string;
}

/**
 * After the run: the files saved, and what the model is told after the streams (what the run
 * itself noted, saved files, a missing module, and last the session state).
 */
async function afterRun(
  sandbox: Sandbox,
  request: ExecuteRequest,
  run: RunOutcome,
  reason: StopReason | undefined,
  log: Logger,
  resumed: ResumeOutcome,
): Promise<AfterRun> {
  const notes = [...run.notes];
  let saved: CollectedFile[] = [];
  let notSaved: NotSaved[] | undefined;
  // A stopped program's files are still collected: a partial result the user may want.
  if (request.filesOut && run.workDir && reason !== 'cancel' && !run.replaced) {
    const collected = await collectOutputs(sandbox, run.workDir, request.filesOut);
    saved = collected.saved;
    notSaved = collected.notSaved;
    notes.push(...collected.notes);
  }
  if (!reason && run.exitCode !== 0) {
    const hint = await moduleHint(sandbox, run.stderr.snapshot(), log);
    if (hint) notes.push(hint);
  }
  const network = joinActivity([replayNetwork(resumed), run.network]);
  const blocked = network && blockedNote(network.connections, request.networkAllowSetting ?? 'the codeactSandbox.network.allow setting');
  if (blocked) notes.push(blocked);
  // Last, so that every session-mode result ends with the state's line.
  let state: StateRecord | undefined;
  if (request.state) {
    const succeeded = !reason && run.exitCode === 0 && !run.oomKilled && !run.replaced;
    const after = stateAfterProgram(request.state, request.sessionKey, resumed, { succeeded, outcome: run.stateOutcome });
    notes.push(...after.notes);
    state = after.record;
  }
  return { notes, saved, ...(notSaved ? { notSaved } : {}), ...(state ? { state } : {}) };
}

/** The result: the model's text, and the facts the recorder and the adapters keep. */
function report(
  sandbox: Sandbox,
  request: ExecuteRequest,
  limits: RunLimits,
  run: RunOutcome,
  reason: StopReason | undefined,
  { notes, saved, notSaved, state }: AfterRun,
  started: number,
  log: Logger,
  resumed: ResumeOutcome,
): ExecuteReport {
  const { stdout, stderr } = run;
  const network = joinActivity([replayNetwork(resumed), run.network]);
  const facts = {
    stdout: stdout.snapshot(),
    stderr: stderr.snapshot(),
    exitCode: reason ? null : run.exitCode,
    ...(reason === 'timeout' ? { timedOut: { seconds: Math.round(limits.timeoutMs / 100) / 10 } } : {}),
    ...(reason === 'cancel' ? { cancelled: true } : {}),
    ...(reason === 'output' ? { outputLimited: { maxBytes: limits.maxOutputBytes } } : {}),
    ...(run.oomKilled ? { oomKilled: { memoryLimitMb: request.memoryMb } } : {}),
    notes,
  };
  const durationMs = Date.now() - started;
  log.info(
    `run in ${sandbox.id} ${run.workDir}: exit=${run.exitCode ?? '-'}${reason ? ` stopped=${reason}` : ''} ` +
      `stdout=${stdout.totalBytes}B stderr=${stderr.totalBytes}B ${durationMs}ms`,
  );
  return {
    text: formatResult(facts, limits.outputBudgetBytes),
    exitCode: facts.exitCode,
    timedOut: reason === 'timeout',
    cancelled: reason === 'cancel',
    outputLimited: reason === 'output',
    durationMs,
    sandboxId: sandbox.id,
    image: sandbox.image,
    ...(sandbox.runtime ? { runtime: sandbox.runtime } : {}),
    ...(run.workDir ? { workDir: run.workDir } : {}),
    stdout: facts.stdout,
    stderr: facts.stderr,
    shown: shownStreams(facts, limits.outputBudgetBytes),
    oomKilled: run.oomKilled,
    ...(state ? { state } : {}),
    ...(resumed.kind !== 'none' ? { resumed: withoutNetwork(resumed) } : {}),
    ...(stdout.spillFile ? { stdoutFile: stdout.spillFile } : {}),
    ...(stderr.spillFile ? { stderrFile: stderr.spillFile } : {}),
    files: saved,
    ...(notSaved ? { notSaved } : {}),
    notes,
    startedAt: new Date(started),
    ...(network ? { network } : {}),
  };
}


/**
 * The model's reflex for a missing module is pip install, which cannot work without network: it
 * is told what the image has and who can add the module. The traceback's end is in the kept tail.
 */
async function moduleHint(sandbox: Sandbox, stderr: CapturedStream, log: Logger): Promise<string | undefined> {
  const text = Buffer.concat([stderr.head, stderr.tail]).toString('utf8');
  if (!missingModuleName(text)) return undefined;
  const distributions = await sandbox.installed?.().catch((e: unknown) => {
    log.warn(`could not read what the sandbox image has: ${describeError(e)}`);
    return undefined;
  });
  return missingModuleHint(text, { ...(distributions ? { distributions } : {}), ...(sandbox.packagesSetting ? { packagesSetting: sandbox.packagesSetting } : {}) });
}

/** Collects declared files, or the files outputs.json lists, and phrases what happened. */
async function collectOutputs(sandbox: Sandbox, workDir: string, out: FilesOutRequest): Promise<{ saved: CollectedFile[]; notes: string[]; notSaved?: NotSaved[] }> {
  const notes: string[] = [];
  let names: readonly string[];
  let caps = out.caps;
  if (out.outputs.mode === 'declared') {
    names = out.outputs.names;
    if (names.length === 0) return { saved: [], notes };
  } else {
    let manifest: Buffer | undefined;
    const read = await sandbox.collect(workDir, [MANIFEST_NAME], { maxFiles: 1, maxFileBytes: MANIFEST_MAX_BYTES, maxTotalBytes: MANIFEST_MAX_BYTES }, async (name, size, body) => {
      const chunks: Buffer[] = [];
      for await (const chunk of body) chunks.push(chunk as Buffer);
      manifest = Buffer.concat(chunks);
      return { name, size };
    });
    if (read.refused.length > 0) {
      notes.push(`${MANIFEST_NAME} was not used (${read.refused[0]!.reason}), so no files were saved.`);
      return { saved: [], notes };
    }
    if (!manifest) return { saved: [], notes };
    const parsed = parseManifest(manifest, { maxBytes: MANIFEST_MAX_BYTES, maxFiles: caps.maxFiles });
    if (!parsed.ok) {
      notes.push(`No files were saved: ${parsed.problems.join(' ')}`);
      return { saved: [], notes };
    }
    names = parsed.names;
    // The manifest takes a file slot and its bytes count, as any collected file.
    caps = { ...caps, maxFiles: caps.maxFiles - 1, maxTotalBytes: Math.max(0, caps.maxTotalBytes - manifest.length) };
    if (names.length === 0) return { saved: [], notes };
  }
  const outcome: CollectOutcome = await sandbox.collect(workDir, names, caps, out.sink);
  if (outcome.saved.length > 0) {
    const list = outcome.saved.map((f) => `${f.name} (${formatBytes(f.size)})`).join(', ');
    notes.push(`Saved for the user ${out.savedWhere}: ${list}. The files are not sent to you; describe them or print what you need from them.`);
  }
  if (outcome.missing.length > 0) {
    const which = out.outputs.mode === 'declared' ? 'Declared in outputs but not written by the program' : `Listed in ${MANIFEST_NAME} but not written by the program`;
    notes.push(`${which}: ${outcome.missing.join(', ')}. Write each file into the working directory under exactly that name.`);
  }
  if (outcome.refused.length > 0) {
    notes.push(
      `Not saved: ${outcome.refused.map((r) => `${r.name} (${r.reason})`).join('; ')}. Only regular files within the limits are saved, and never in part.`,
    );
  }
  const notSaved = [...outcome.missing.map((name) => ({ name, reason: 'not written by the program' })), ...outcome.refused];
  return { saved: outcome.saved, notes, ...(notSaved.length ? { notSaved } : {}) };
}
