/**
 * Re-running a chat's kept runs in a sandbox that holds no state (chain.ts decides which). Each
 * run goes back to the directory it first ran in, with its workspace files shared again. The
 * replay as a whole has a time budget (three times what the runs took when they were calls, at
 * least one call's limit, and never more than REPLAY_BUDGET_MS), so a long chain cannot hold a
 * call for hours: past it the replay ends with the state it reached (`partial`, `budgetMs` set).
 *
 * A run that fails now ends the replay with the state before it (`partial`). Anything that leaves
 * the sandbox's state unknown (the call's cancel, the sandbox stopping or failing) is
 * `interrupted`: the caller must not let a program run on that state.
 */
import { describeError } from '../errors';
import type { Logger } from '../logger';
import { joinActivity, type NetworkActivity } from '../network';
import type { Sandbox, StagedFile } from '../sandbox';
import { duration, seconds, unkeptClause } from './sentences';

/** One kept run, as a replay needs it. */
export interface ReplayRun {
  runId: string;
  program: string;
  workDir?: string;
  filesIn: readonly string[];
  /** What the call took when it ran (the replay's budget is counted from these). */
  durationMs?: number;
  state: { now?: string };
}

export interface ReplayFiles {
  /** The workspace files a replayed run was given, checked again as a new call's would be. */
  files(names: readonly string[], program: string): Promise<StagedFile[]>;
}

/**
 * `network`: the connections the re-run runs made (each marked with its run), for the call's
 * record: a replay reaches the network as the runs did, and none of it may go unrecorded.
 */
export type Replay =
  | { kind: 'done'; ms: number; now: string; notes: string[]; network?: NetworkActivity }
  /** `budgetMs`: the replay stopped because it ran past its time budget, this long. */
  | { kind: 'partial'; replayed: number; of: number; failure: string; budgetMs?: number; ms: number; now: string; recorded: string; notes: string[]; network?: NetworkActivity }
  | { kind: 'interrupted'; why: string; network?: NetworkActivity };

/** Longest stderr tail quoted in a failed replay's sentence. */
const FAILURE_TAIL = 300;
/** The replay's budget, as a multiple of what its runs took as calls. */
const BUDGET_FACTOR = 3;
/**
 * The most a replay may take in all, however long its runs took or may take: the call (and the
 * person who was asked to allow it) waits for it, so minutes, not the hours 200 runs at their time
 * limit could take.
 */
export const REPLAY_BUDGET_MS = 5 * 60 * 1000;

export async function replayChain(sandbox: Sandbox, source: ReplayFiles, runs: readonly ReplayRun[], timeoutMs: number, signal: AbortSignal, log: Logger): Promise<Replay> {
  const started = Date.now();
  const budgetMs = Math.min(REPLAY_BUDGET_MS, Math.max(timeoutMs, BUDGET_FACTOR * runs.reduce((sum, r) => sum + (r.durationMs ?? timeoutMs), 0)));
  const notes: string[] = [];
  const made: NetworkActivity[] = [];
  const network = () => {
    const joined = joinActivity(made);
    return joined ? { network: joined } : {};
  };
  let now = '';
  for (const [i, run] of runs.entries()) {
    const left = budgetMs - (Date.now() - started);
    const result: OneResult = left <= 0 ? { failure: '', overBudget: true } : await replayOne(sandbox, source, run, Math.min(timeoutMs, left), signal);
    // A run stopped by what was left of the budget, not by its own limit, ran past the budget.
    if ('failure' in result && (result.overBudget || (result.timedOut && left < timeoutMs))) {
      result.overBudget = true;
      result.failure = `the replay ran past its time budget of ${duration(budgetMs)}`;
    }
    if (result.network) made.push({ ...result.network, connections: result.network.connections.map((c) => ({ ...c, replayOf: run.runId })) });
    if ('interrupted' in result) {
      log.warn(`resume: the replay stopped at run ${run.runId}: ${result.interrupted}${result.detail ? ` (${result.detail})` : ''}`);
      return { kind: 'interrupted', why: result.interrupted, ...network() };
    }
    notes.push(...(result.notes ?? []));
    if ('failure' in result) {
      log.info(`resume: run ${run.runId} failed on replay: ${result.failure}`);
      const recorded = i === 0 ? '' : runs[i - 1]!.state.now!;
      const budget = result.overBudget ? { budgetMs } : {};
      return { kind: 'partial', replayed: i, of: runs.length, failure: result.failure, ...budget, ms: Date.now() - started, now, recorded, notes, ...network() };
    }
    now = result.now;
  }
  log.info(`resume: ${runs.length} run(s) replayed in ${Date.now() - started} ms`);
  return { kind: 'done', ms: Date.now() - started, now, notes, ...network() };
}

/** `network`: what the run did on the network, as far as it ran; `timedOut`: stopped at the time limit it was given; `overBudget`: the replay's time was up. */
type OneResult = ({ now: string; notes?: string[] } | { failure: string; notes?: string[]; timedOut?: boolean; overBudget?: boolean } | { interrupted: string; detail?: string }) & {
  network?: NetworkActivity;
};

async function replayOne(sandbox: Sandbox, source: ReplayFiles, run: ReplayRun, timeoutMs: number, signal: AbortSignal): Promise<OneResult> {
  let files: StagedFile[] = [];
  if (run.filesIn.length > 0) {
    try {
      files = await source.files(run.filesIn, run.program);
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
    const network = exit.network ? { network: exit.network } : {};
    if (signal.aborted) return { interrupted: 'the call was cancelled', ...network };
    if (exit.replaced || exit.state?.ended) return { interrupted: 'the sandbox stopped while a run was re-run', ...network };
    const notes = exit.notes ?? [];
    if (timedOut) return { failure: `it ran past the time limit of ${seconds(timeoutMs)}`, timedOut: true, notes, ...network };
    if (exit.oomKilled) return { failure: 'it ran out of memory', notes, ...network };
    if (exit.exitCode !== 0 || !exit.state?.kept) {
      const tail = lastLine(Buffer.concat(stderr).toString('utf8'));
      const how =
        exit.exitCode === null
          ? 'it was stopped'
          : exit.exitCode !== 0
            ? `exit code ${exit.exitCode}`
            : `its state could not be kept${exit.state?.reason ? `, because ${unkeptClause(exit.state.reason)}` : ''}`;
      return { failure: tail ? `${how}: ${tail}` : how, notes, ...network };
    }
    return { now: exit.state.now, notes, ...network };
  } catch (e) {
    return signal.aborted ? { interrupted: 'the call was cancelled' } : { interrupted: 'the sandbox stopped while a run was re-run', detail: describeError(e) };
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

