import { ToolError } from './errors';
import { executeCode, type ExecuteReport, type ExecuteRequest, type FilesOutRequest } from './executeCode';
import { selectFilesIn, type WorkspaceSource } from './files/filesIn';
import { checkManifestCaps, MANIFEST_EXAMPLE, MANIFEST_NAME } from './files/manifest';
import { validateOutputNames } from './files/names';
import type { FilesOutCaps, RunLimits } from './limits';
import type { Logger } from './logger';
import type { NetworkActivity } from './network';
import type { CollectedFile, SandboxProvider, StagedFile } from './sandbox';
import { REFUSED, refusedTokenMessage, type ResumeSource, type RewindTarget, type SessionRequest, type SessionStates, type StartTokenReading, type StateRecord, type StateRun } from './state';
import { sessionDigest } from './session';
import type { FilesInCaps } from './settings';
import type { ToolInput } from './toolInput';

export type OutputsMode = 'declared' | 'manifest';

/** What a run leaves on disk (implemented by the artifact store's run writer). */
export interface RunRecorder {
  /** The run's own folder: full streams of a cut output are kept here. */
  readonly dir: string;
  addFile(name: string, body: NodeJS.ReadableStream, size: number): Promise<CollectedFile>;
  finish(outcome: RunOutcomeRecord): unknown;
  discard(): void;
}

export interface RunOutcomeRecord {
  startedAt: string;
  durationMs: number;
  image: string;
  sandboxId: string;
  runtime?: string;
  exitCode: number | null;
  timedOut: boolean;
  cancelled: boolean;
  program: string;
  resultText: string;
  filesIn: string[];
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** Each stream as the model saw it, and its whole size. */
  stdout: string;
  stderr: string;
  stdoutBytes: number;
  stderrBytes: number;
  oomKilled: boolean;
  outputLimited: boolean;
  timeoutMs: number;
  memoryMb: number;
  workDir?: string;
  state?: StateRecord;
  /** A sandbox with a network: the program's connections. */
  network?: NetworkActivity;
}

export interface ToolCallOptions {
  sessionKey: string;
  limits: RunLimits;
  memoryMb: number;
  /** The workspace (undefined when none is open) and the caps on sharing from it. */
  filesIn: { source: WorkspaceSource | undefined; caps: FilesInCaps };
  filesOut: { mode: OutputsMode; caps: FilesOutCaps; savedWhere: string };
  /** Starts the run's record; without one, nothing is kept and no files can be saved. */
  record?: () => RunRecorder;
  /** Session mode (the state setting): the host's record of its chats' states. Unset: fresh mode. */
  states?: SessionStates;
  /** Session mode: the chat's recorded runs, from which a removed sandbox's state is rebuilt (resume). Unset: never rebuilt. */
  stateRuns?: () => Promise<StateRun[]>;
  /** Session mode: the user chose, in the view, to go back to the state after this run of the chat. */
  rewindTo?: string;
  /**
   * Session mode, where a chat can start from another's state: what a `startFrom` token names
   * (made by this host's store, good for minutes and for one chat: startFrom.ts), taking it for a
   * chat (by its store digest) and giving it back; and another chat's recorded runs.
   */
  otherChats?: {
    readToken(token: string): StartTokenReading;
    takeToken(token: string, chat: string): boolean;
    giveBackToken(token: string, chat: string): void;
    runs(chat: string): Promise<StateRun[]>;
  };
  /** How this host's user adds a domain to the allow-list ("the codeactSandbox.network.allow setting", "--allow-domain"). */
  networkAllowSetting?: string;
  /** Each piece of the program's output as it comes (a live view). */
  onOutput?: ExecuteRequest['onOutput'];
}

export interface ToolCallResult {
  report: ExecuteReport;
  files: CollectedFile[];
}

/**
 * One execute_code call end to end: check the requested workspace files and declared outputs
 * (before anything runs or is read), run the program, collect what it produced, and keep a record.
 * Everything the model asked for that cannot be done is refused up front with one message.
 */
export async function executeToolCall(
  provider: SandboxProvider,
  log: Logger,
  input: ToolInput,
  options: ToolCallOptions,
  signal?: AbortSignal,
): Promise<ToolCallResult> {
  if (input.rewind !== undefined && input.reset === true) {
    throw new ToolError('invalid_input', REFUSED.rewindWithReset);
  }
  if (input.rewind !== undefined && !options.states) {
    throw new ToolError('invalid_input', REFUSED.rewindWithoutSession);
  }
  const startFrom = startFromOf(input, options);
  const files = await filesInFor(input, options);
  const filesOut = filesOutFor(input, options);
  const recorder = options.record?.();
  if (!recorder && filesOut?.outputs.mode === 'declared') {
    throw new ToolError('invalid_input', 'Produced files cannot be saved here. Call execute_code without `outputs` and print the results instead.');
  }
  let report: ExecuteReport;
  try {
    report = await executeCode(
      provider,
      log,
      {
        code: input.code,
        sessionKey: options.sessionKey,
        memoryMb: options.memoryMb,
        ...(recorder ? { spillDir: recorder.dir } : {}),
        ...(files.length ? { files } : {}),
        ...(filesOut && recorder ? { filesOut: { ...filesOut, sink: (name, size, body) => recorder.addFile(name, body, size) } } : {}),
        ...(options.states ? { state: sessionRequest(input, options, options.states, startFrom) } : {}),
        ...(options.networkAllowSetting ? { networkAllowSetting: options.networkAllowSetting } : {}),
        ...(options.onOutput ? { onOutput: options.onOutput } : {}),
      },
      options.limits,
      signal,
    );
  } catch (e) {
    recorder?.discard();
    throw e;
  }
  recorder?.finish(outcomeRecord(input, options, report, files));
  return { report, files: report.files };
}

/**
 * The call's state: an empty one on the model's `reset`, and also when the storage budget deleted
 * the chat's state since its last call (unless the call goes back, or starts from another chat's).
 */
function sessionRequest(input: ToolInput, options: ToolCallOptions, states: SessionStates, startFrom: StartTarget | undefined): SessionRequest {
  const rewind = rewindOf(input, options, startFrom);
  const reset = input.reset === true || (rewind.rewind === undefined && states.stateDropped(options.sessionKey));
  return { reset, states, ...resumeFrom(options), ...rewind };
}

/**
 * Going back: the model's `rewind`, else a run the user chose in the view. The model's `reset` or
 * `rewind` overrides the user's choice, which the model did not know of: the result says so.
 */
function rewindOf(input: ToolInput, options: ToolCallOptions, startFrom: StartTarget | undefined): { rewind?: RewindTarget; userChoiceSetAside?: 'reset' | 'rewind' | 'startFrom' } {
  const by = input.reset ? ('reset' as const) : startFrom ? ('startFrom' as const) : ('rewind' as const);
  const setAside = options.rewindTo ? { userChoiceSetAside: by } : {};
  if (startFrom) return { rewind: startFrom, ...setAside };
  if (input.rewind) return { rewind: { back: input.rewind }, ...setAside };
  if (input.reset) return setAside;
  if (options.rewindTo) return { rewind: { afterRun: options.rewindTo } };
  return {};
}

type StartTarget = Extract<RewindTarget, { startFrom: unknown }>;

/** The chat and run `startFrom` names, checked before anything runs, and the token's use (taken as the start begins). */
function startFromOf(input: ToolInput, options: ToolCallOptions): StartTarget | undefined {
  if (input.startFrom === undefined) return undefined;
  if (input.reset === true || input.rewind !== undefined) {
    throw new ToolError('invalid_input', REFUSED.startWithOthers);
  }
  if (!options.states) {
    throw new ToolError('invalid_input', REFUSED.startWithoutSession);
  }
  const other = options.otherChats;
  if (!other || !options.stateRuns) {
    throw new ToolError('invalid_input', REFUSED.startHere);
  }
  const token = input.startFrom;
  const chat = sessionDigest(options.sessionKey);
  const reading = other.readToken(token);
  if (!('origin' in reading)) throw new ToolError('invalid_input', refusedTokenMessage(reading, chat));
  return { startFrom: reading.origin, token: { take: () => other.takeToken(token, chat), giveBack: () => other.giveBackToken(token, chat) } };
}

/** A resume's source: the chat's records (and other chats', to start from), and its replayed runs' files shared again under the same rules as a call's. */
function resumeFrom(options: ToolCallOptions): { resume?: ResumeSource } {
  const runs = options.stateRuns;
  if (!runs) return {};
  const other = options.otherChats;
  return {
    resume: {
      runs,
      ...(other ? { chatRuns: (chat: string) => other.runs(chat) } : {}),
      files: (names, program) => filesInFor({ code: program, files: [...names] }, options),
    },
  };
}

/** The workspace files the call shares, checked against the listing and the caps before any is read. */
async function filesInFor(input: ToolInput, options: ToolCallOptions): Promise<StagedFile[]> {
  const requested = input.files ?? [];
  if (requested.length === 0) return [];
  const { source, caps } = options.filesIn;
  if (!source) {
    throw new ToolError('invalid_input', 'No workspace folder is open, so no files can be shared. Call execute_code without `files`, or ask the user to open the folder that holds the data.');
  }
  if (caps.maxFiles === 0) {
    throw new ToolError('invalid_input', 'The user has turned off sharing workspace files with the sandbox. Call execute_code without `files`.');
  }
  return selectFilesIn(requested, source, { ...caps, programBytes: Buffer.byteLength(input.code, 'utf8') });
}

/** Which produced files are collected: the declared names (checked), the manifest's, or none. */
function filesOutFor(input: ToolInput, options: ToolCallOptions): Omit<FilesOutRequest, 'sink'> | undefined {
  const out = options.filesOut;
  const declared = input.outputs ?? [];
  if (out.mode === 'manifest') {
    if (declared.length > 0) {
      throw new ToolError(
        'invalid_input',
        `The user chose manifest mode for produced files: do not pass \`outputs\`. Have the program write ${MANIFEST_NAME} listing the files it produced, as ${MANIFEST_EXAMPLE}.`,
      );
    }
    checkManifestCaps(out.caps.maxFiles);
    return { outputs: { mode: 'manifest' }, caps: out.caps, savedWhere: out.savedWhere };
  }
  if (declared.length === 0) return undefined;
  if (out.caps.maxFiles === 0) {
    throw new ToolError('invalid_input', 'The user has turned off saving files from the sandbox. Call execute_code without `outputs` and print the results instead.');
  }
  const names = validateOutputNames(declared, { maxFiles: out.caps.maxFiles });
  return { outputs: { mode: 'declared', names }, caps: out.caps, savedWhere: out.savedWhere };
}

/** The run's record: what ran, on what, and what the model was shown. */
function outcomeRecord(input: ToolInput, options: ToolCallOptions, report: ExecuteReport, files: readonly StagedFile[]): RunOutcomeRecord {
  return {
    startedAt: report.startedAt.toISOString(),
    durationMs: report.durationMs,
    image: report.image,
    sandboxId: report.sandboxId,
    ...(report.runtime ? { runtime: report.runtime } : {}),
    exitCode: report.exitCode,
    timedOut: report.timedOut,
    cancelled: report.cancelled,
    program: input.code,
    resultText: report.text,
    filesIn: files.map((f) => f.name),
    stdoutTruncated: report.stdoutFile !== undefined,
    stderrTruncated: report.stderrFile !== undefined,
    stdout: report.shown.stdout,
    stderr: report.shown.stderr,
    stdoutBytes: report.stdout.totalBytes,
    stderrBytes: report.stderr.totalBytes,
    oomKilled: report.oomKilled,
    outputLimited: report.outputLimited,
    timeoutMs: options.limits.timeoutMs,
    memoryMb: options.memoryMb,
    ...(report.workDir ? { workDir: report.workDir } : {}),
    ...(report.state ? { state: report.state } : {}),
    ...(report.network ? { network: report.network } : {}),
  };
}
