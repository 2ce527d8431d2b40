/**
 * Session mode's resume: when a chat's sandbox is gone (idle removal, a restart, an engine
 * restart, a crash), its next call rebuilds the state by re-running the chat's kept runs in
 * order, in the directories they first ran in. Which runs those are is decided from the records
 * alone: each kept run names the state it started from and the one it left, so the chain from
 * an empty state to the last one is followed link by link, and a missing or changed link stops
 * the resume with a sentence instead of restoring something different.
 *
 * Pure logic and one effect (running the chain through a Sandbox); the records come from the
 * host's store through ResumeSource.
 */
import { ToolError, describeError } from './errors';
import type { Logger } from './logger';
import type { Sandbox, StagedFile } from './sandbox';

/** One recorded session-mode run, as the chain needs it. */
export interface StateRun {
  runId: string;
  program: string;
  /** The directory it ran in, inside the sandbox: a replay runs it there again. */
  workDir?: string;
  /** Workspace files it was given (shared again from the workspace as it is now). */
  filesIn: readonly string[];
  state: {
    reset: boolean;
    kept: boolean;
    /** The state it started from and the one the next call started from ('' : empty). */
    from?: string;
    now?: string;
    /** The sandbox stopped while it ran. */
    ended?: boolean;
  };
  /** The store checked the record's seal: it was written by this store for this chat, unchanged. */
  sealed: boolean;
}

export type Chain =
  /** Nothing to restore: no session run, or the last state is empty. */
  | { kind: 'none' }
  | { kind: 'ok'; runs: StateRun[]; target: string }
  | { kind: 'broken'; why: 'missing' | 'changed' | 'unrecorded' };

/**
 * The kept runs that rebuild the chat's last state, oldest first, from the chat's readable
 * session-mode records, oldest first. A record the store could not read is simply absent here:
 * the link it was is missing, and the chain is broken there.
 */
export function stateChain(runs: readonly StateRun[]): Chain {
  // The last state is the one the last call left; a call the sandbox ended under left none, and
  // the state before it is the one to come back to.
  let target: string | undefined;
  for (let i = runs.length - 1; i >= 0 && target === undefined; i--) {
    const s = runs[i]!.state;
    // Ended under a stopped sandbox, or run without the warm interpreter: it left no state of its own.
    if (s.ended || (!s.kept && s.now === undefined)) continue;
    if (s.now === undefined) return { kind: 'broken', why: 'unrecorded' };
    target = s.now;
  }
  if (!target) return { kind: 'none' };
  const chain: StateRun[] = [];
  let want = target;
  let end = runs.length;
  while (want !== '') {
    let found = -1;
    for (let i = end - 1; i >= 0; i--) {
      const s = runs[i]!.state;
      if (s.kept && s.now === want) {
        found = i;
        break;
      }
    }
    if (found < 0) return { kind: 'broken', why: 'missing' };
    const run = runs[found]!;
    if (!run.sealed) return { kind: 'broken', why: 'changed' };
    if (run.state.from === undefined) return { kind: 'broken', why: 'unrecorded' };
    chain.push(run);
    want = run.state.reset ? '' : run.state.from;
    end = found;
  }
  return { kind: 'ok', runs: chain.reverse(), target };
}

/** Where a host's records of a chat's runs come from, and how a replayed run's files are shared again. */
export interface ResumeSource {
  /** The chat's session-mode runs, oldest first. */
  runs(): Promise<StateRun[]>;
  /** The workspace files a replayed run was given, checked again as a new call's would be. */
  files(names: readonly string[]): Promise<StagedFile[]>;
}

export type ResumeOutcome =
  | { kind: 'none' }
  /** `now`: the state's id in this sandbox; `recorded`: the id the records know it by. */
  | { kind: 'restored'; runs: number; ms: number; now: string; recorded: string }
  /** The model's `rewind`: `back` kept calls undone, `runs` earlier ones re-run in a new sandbox. */
  | { kind: 'rewound'; back: number; byUser: boolean; runs: number; ms: number; now: string; recorded: string }
  /** `cause`: the sandbox had been removed, or the call went back. */
  | { kind: 'partial'; cause: 'removed' | 'rewind'; replayed: number; of: number; failure: string; ms: number; now: string; recorded: string }
  | { kind: 'refused'; why: 'missing' | 'changed' | 'unrecorded' | 'unreadable' };

const WHY: Record<Extract<ResumeOutcome, { kind: 'refused' }>['why'], string> = {
  missing: 'the record of one of them is missing (deleted, or removed to keep within the storage budget)',
  changed: 'the record of one of them was changed, or was not written for this chat',
  unrecorded: 'they ran before this version recorded how each state follows from the one before',
  unreadable: "this chat's records could not be read",
};

/** The sentence the model is told, before the call's own state line. */
export function resumeSentence(outcome: ResumeOutcome): string | undefined {
  switch (outcome.kind) {
    case 'none':
      return undefined;
    case 'restored':
      return (
        `State: restored before this call by re-running this chat's ${plural(outcome.runs, 'kept run')} in order (${seconds(outcome.ms)}), because its sandbox had been removed. ` +
        'Values computed from time, randomness, the network or workspace files that changed since may differ from before; files those runs wrote were written again.'
      );
    case 'rewound':
      return (
        `State: went back ${plural(outcome.back, 'kept call')} before this call${outcome.byUser ? ', as the user asked in the CodeAct Sandbox view' : ''}, in a new sandbox` +
        (outcome.runs === 0
          ? ', to an empty state.'
          : `, by re-running this chat's ${plural(outcome.runs, 'earlier kept run')} in order (${seconds(outcome.ms)}). ` +
            'Values computed from time, randomness, the network or workspace files that changed since may differ from before.')
      );
    case 'partial':
      return (
        `State: partly restored. ${outcome.cause === 'removed' ? "This chat's sandbox had been removed; re-running" : 'Going back, re-running'} its kept run ${outcome.replayed + 1} of ${outcome.of} failed (${outcome.failure}), ` +
        `so this call started from ${outcome.replayed === 0 ? 'an empty state' : `the state after run ${outcome.replayed}`}. Re-create what is missing, or start over with reset.`
      );
    case 'refused':
      return `State: not restored. This chat's sandbox had been removed, and its kept runs were not re-run because ${WHY[outcome.why]}; this call started from an empty state.`;
  }
}

/** Longest stderr tail quoted in a failed replay's sentence. */
const FAILURE_TAIL = 300;

/**
 * Rebuilds the chat's state in a sandbox that holds none, by re-running the chain. Each replayed
 * run has the call's time limit; the caller's cancel stops it. The model's program runs after,
 * on whatever state the replay reached, and is told which.
 */
export async function resumeState(sandbox: Sandbox, source: ResumeSource, timeoutMs: number, signal: AbortSignal, log: Logger): Promise<ResumeOutcome> {
  let chain: Chain;
  try {
    chain = stateChain(await source.runs());
  } catch (e) {
    log.warn(`resume: the chat's records could not be read: ${describeError(e)}`);
    return { kind: 'refused', why: 'unreadable' };
  }
  if (chain.kind === 'none') return chain;
  if (chain.kind === 'broken') return { kind: 'refused', why: chain.why };
  const replay = await replayChain(sandbox, source, chain.runs, timeoutMs, signal, log);
  if (replay.kind === 'partial') return { ...replay, cause: 'removed' };
  return { kind: 'restored', runs: chain.runs.length, ms: replay.ms, now: replay.now, recorded: chain.target };
}

/**
 * Goes back `back` kept calls (the model's `rewind`): the chain up to that point is checked first
 * (a call that cannot go back is refused before anything runs), then the session's sandbox is
 * replaced by a new one and the earlier runs are re-run in it.
 */
/** How far back: `back` kept calls (the model's `rewind`), or to the state after a run the user chose in the view. */
export type RewindTarget = { back: number } | { afterRun: string };

/** Where `afterRun` is in the chat's chain: the number of kept calls after it, or why it cannot be gone back to. */
export function callsAfter(chain: Chain, runId: string): { back: number } | { why: string } {
  if (chain.kind === 'broken') return { why: WHY[chain.why] };
  const i = chain.kind === 'ok' ? chain.runs.findIndex((r) => r.runId === runId) : -1;
  if (i < 0) return { why: "that run's state is no longer the one this chat's state grew from (it was not kept, or a reset or going back came after it)" };
  return { back: (chain as Extract<Chain, { kind: 'ok' }>).runs.length - 1 - i };
}

export async function rewindState(
  sandbox: Sandbox,
  source: ResumeSource | undefined,
  target: RewindTarget,
  timeoutMs: number,
  signal: AbortSignal,
  log: Logger,
): Promise<Extract<ResumeOutcome, { kind: 'rewound' | 'partial' }>> {
  if (!source || !sandbox.renew) throw new ToolError('invalid_input', 'This host keeps no record of the chat\'s runs, so it cannot go back. Call execute_code without `rewind`.');
  let chain: Chain;
  try {
    chain = stateChain(await source.runs());
  } catch (e) {
    throw new ToolError('invalid_input', "This chat's records could not be read, so it cannot go back. Call execute_code without `rewind`.", { cause: e });
  }
  if (chain.kind === 'broken') throw new ToolError('invalid_input', `This chat cannot go back, because ${WHY[chain.why]}. Call execute_code without \`rewind\`, or with \`reset\`: true.`);
  const kept = chain.kind === 'ok' ? chain.runs : [];
  let back: number;
  if ('afterRun' in target) {
    const after = callsAfter(chain, target.afterRun);
    if ('why' in after) {
      throw new ToolError('invalid_input', `The user asked to go back to the state after an earlier run, but ${after.why}. Call again: the call runs on the chat's current state.`);
    }
    back = after.back;
  } else back = target.back;
  if (back > kept.length) {
    throw new ToolError(
      'invalid_input',
      `This chat's state holds ${plural(kept.length, 'kept call')}, so \`rewind\` can be at most ${kept.length}. Call again with a smaller \`rewind\`, or with \`reset\`: true for an empty state.`,
    );
  }
  const runs = kept.slice(0, kept.length - back);
  await sandbox.renew(signal);
  const replay = await replayChain(sandbox, source, runs, timeoutMs, signal, log);
  if (replay.kind === 'partial') return { ...replay, cause: 'rewind' };
  return { kind: 'rewound', back, byUser: 'afterRun' in target, runs: runs.length, ms: replay.ms, now: replay.now, recorded: runs.at(-1)?.state.now ?? '' };
}

type Replay =
  | { kind: 'done'; ms: number; now: string }
  | { kind: 'partial'; replayed: number; of: number; failure: string; ms: number; now: string; recorded: string };

/** Re-runs `runs` in order in a sandbox holding no state; stops at the first that fails now. */
async function replayChain(sandbox: Sandbox, source: ResumeSource, runs: readonly StateRun[], timeoutMs: number, signal: AbortSignal, log: Logger): Promise<Replay> {
  const started = Date.now();
  let now = '';
  for (const [i, run] of runs.entries()) {
    const result = await replayOne(sandbox, source, run, timeoutMs, signal);
    if (result.failure !== undefined) {
      log.info(`resume: run ${run.runId} failed on replay: ${result.failure}`);
      const recorded = i === 0 ? '' : runs[i - 1]!.state.now!;
      return { kind: 'partial', replayed: i, of: runs.length, failure: result.failure, ms: Date.now() - started, now, recorded };
    }
    now = result.now;
  }
  log.info(`resume: ${runs.length} run(s) replayed in ${Date.now() - started} ms`);
  return { kind: 'done', ms: Date.now() - started, now };
}

async function replayOne(sandbox: Sandbox, source: ResumeSource, run: StateRun, timeoutMs: number, signal: AbortSignal): Promise<{ now: string; failure?: undefined } | { failure: string }> {
  let files: StagedFile[] = [];
  if (run.filesIn.length > 0) {
    try {
      files = await source.files(run.filesIn);
    } catch (e) {
      return { failure: `its workspace files could not be shared again: ${describeError(e)}` };
    }
  }
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const stderr: Buffer[] = [];
  let stderrBytes = 0;
  try {
    const exit = await sandbox.run({
      code: run.program,
      ...(files.length ? { files } : {}),
      ...(run.workDir ? { workDir: run.workDir } : {}),
      state: { reset: false },
      signal: stop.signal,
      onStart: () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          timedOut = true;
          stop.abort();
        }, timeoutMs);
      },
      onStdout: () => undefined,
      onStderr: (chunk) => {
        // Only the end is quoted: keep what covers it.
        stderr.push(chunk);
        stderrBytes += chunk.length;
        while (stderrBytes - stderr[0]!.length > FAILURE_TAIL * 4) stderrBytes -= stderr.shift()!.length;
      },
    });
    if (signal.aborted) return { failure: 'the call was cancelled' };
    if (timedOut) return { failure: `it ran past the time limit of ${seconds(timeoutMs)}` };
    if (exit.oomKilled) return { failure: 'it ran out of memory' };
    if (exit.exitCode !== 0 || !exit.state?.kept) {
      const tail = lastLine(Buffer.concat(stderr).toString('utf8'));
      const how = exit.exitCode === null ? 'it was stopped' : exit.exitCode !== 0 ? `exit code ${exit.exitCode}` : 'its state could not be kept';
      return { failure: tail ? `${how}: ${tail}` : how };
    }
    return { now: exit.state.now };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
}

/** The last non-empty line of a traceback (the exception), cut to a sentence's length. */
function lastLine(text: string): string {
  const line = text.split('\n').map((l) => l.trim()).filter(Boolean).at(-1) ?? '';
  return line.length > FAILURE_TAIL ? `${line.slice(0, FAILURE_TAIL)}…` : line;
}

function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
