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
import type { NetworkActivity } from './network';
import { duration, replayChain, seconds, type Replay, type ReplayFiles } from './replay';
import type { Sandbox } from './sandbox';
import type { TokenUse } from './startFrom';

/** A run of a chat, by the chat's store digest and the run's id. */
export interface ChatRun {
  chat: string;
  run: string;
}

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
    /** It started from the state another chat had after that chat's run: the chain goes on there. */
    origin?: ChatRun;
  };
  /** What the call took (the replay's time budget is counted from these). */
  durationMs?: number;
  /** The store checked the record's seal: it was written by this store for this chat, unchanged. */
  sealed: boolean;
  /** A run of the chat this one started from (another chat's state), not one of its own. */
  otherChat?: boolean;
}

export type Chain =
  /** Nothing to restore: no session run, or the last state is empty. */
  | { kind: 'none' }
  | { kind: 'ok'; runs: StateRun[]; target: string }
  | { kind: 'broken'; why: 'missing' | 'changed' | 'unrecorded' | 'long' };

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
    // An unsealed record must not choose which state comes back (an older one, say).
    if (!runs[i]!.sealed) return { kind: 'broken', why: 'changed' };
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
  if (chain.length > MAX_REPLAYED_RUNS) return { kind: 'broken', why: 'long' };
  return { kind: 'ok', runs: chain.reverse(), target };
}

/** Past this many kept runs, a chat's state is not rebuilt by replay (it would hold its call for too long). */
export const MAX_REPLAYED_RUNS = 200;

/** Where a host's records of a chat's runs come from, and how a replayed run's files are shared again. */
export interface ResumeSource extends ReplayFiles {
  /** The chat's session-mode runs, oldest first. */
  runs(): Promise<StateRun[]>;
  /** Another chat's, by its store digest (a chat started from its state); unset where no chat can. */
  chatRuns?(chat: string): Promise<StateRun[]>;
}

/** What the re-run runs did on the network (replay.ts): the call's record holds it with the call's own. */
type Replayed = { network?: NetworkActivity };

export type ResumeOutcome =
  | { kind: 'none' }
  /**
   * `now`: the state's id in this sandbox; `recorded`: the id the records know it by; `older`:
   * the records end before the state this host last knew (the latest kept calls' records are gone).
   */
  | ({ kind: 'restored'; runs: number; ms: number; now: string; recorded: string; older: boolean; notes: string[] } & Replayed)
  /** The model's `rewind`: `back` kept calls undone, `runs` earlier ones re-run in a new sandbox. */
  | ({ kind: 'rewound'; back: number; byUser: boolean; runs: number; ms: number; now: string; recorded: string; notes: string[] } & Replayed)
  /** `startFrom`: the chat started from the state another chat had after its run `origin.run`, re-running `runs` of that chat's kept runs. */
  | ({ kind: 'started'; origin: ChatRun; runs: number; ms: number; now: string; recorded: string; notes: string[] } & Replayed)
  /**
   * `cause`: the sandbox had been removed, the call went back, or it started from another chat's
   * state (`origin`). `budgetMs`: the replay stopped at its time budget (replay.ts), not at a run that failed.
   */
  | ({ kind: 'partial'; cause: 'removed' | 'rewind' | 'startFrom'; origin?: ChatRun; replayed: number; of: number; failure: string; budgetMs?: number; ms: number; now: string; recorded: string; notes: string[] } & Replayed)
  /** The sandbox's state became unknown during the replay (cancel, the sandbox stopped): no program may run on it. */
  | ({ kind: 'interrupted'; why: string } & Replayed)
  | { kind: 'refused'; why: 'missing' | 'changed' | 'unrecorded' | 'unreadable' | 'long' };

export const WHY: Record<Extract<ResumeOutcome, { kind: 'refused' }>['why'], string> = {
  missing: 'the record of one of them is missing (deleted, or removed to keep within the storage budget)',
  changed: 'the record of one of them was changed, or was not written for this chat',
  unrecorded: 'they ran before this version recorded how each state follows from the one before',
  unreadable: "this chat's records could not be read",
  long: `there are more than ${MAX_REPLAYED_RUNS} of them`,
};

const PARTIAL: Record<Extract<ResumeOutcome, { kind: 'partial' }>['cause'], string> = {
  removed: "This chat's sandbox had been removed; re-running",
  rewind: 'Going back, re-running',
  startFrom: "Starting from the state another chat had after one of its runs, as the user asked, re-running",
};

/** The sentence the model is told, before the call's own state line. */
export function resumeSentence(outcome: ResumeOutcome): string | undefined {
  switch (outcome.kind) {
    case 'none':
      return undefined;
    case 'restored':
      return (
        `State: restored before this call by re-running this chat's ${plural(outcome.runs, 'kept run')} in order (${seconds(outcome.ms)}), because its sandbox had been removed` +
        (outcome.older ? "; it is an earlier state than the chat's last one, whose latest kept calls' records are gone. " : '. ') +
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
    case 'started':
      return (
        "State: started from the state another chat had after one of its runs, as the user asked in the CodeAct Sandbox view, in a new sandbox" +
        (outcome.runs === 0
          ? ': that state was empty.'
          : `, by re-running that chat's ${plural(outcome.runs, 'kept run')} in order (${seconds(outcome.ms)}). ` +
            'Values computed from time, randomness, the network or workspace files that changed since may differ from that chat; files those runs wrote were written again. Later calls of this chat do not change the other chat.')
      );
    case 'partial': {
      const whose = outcome.cause === 'startFrom' ? "that chat's" : 'its';
      const stopped =
        outcome.budgetMs !== undefined
          ? `${whose} ${plural(outcome.of, 'kept run')} did not finish within the ${duration(outcome.budgetMs)} a rebuild may take (${outcome.replayed} ran), `
          : `${whose} kept run ${outcome.replayed + 1} of ${outcome.of} failed (${outcome.failure}), `;
      return (
        `State: partly restored. ${PARTIAL[outcome.cause]} ${stopped}` +
        `so this call started from ${outcome.replayed === 0 ? 'an empty state' : `the state after run ${outcome.replayed}`}. Re-create what is missing, or start over with reset.`
      );
    }
    case 'interrupted':
      return undefined;
    case 'refused':
      return `State: not restored. This chat's sandbox had been removed, and its kept runs were not re-run because ${WHY[outcome.why]}; this call started from an empty state.`;
  }
}

/** Told when the model's `reset` or `rewind` overrode the run the user chose to go back to (it could not know of it). */
export function setAsideSentence(by: 'reset' | 'rewind' | 'startFrom'): string {
  return `The user had chosen, in the CodeAct Sandbox view, to go back to the state after an earlier run; this call's \`${by}\` came first, so that was not done. Tell the user, who can choose it again.`;
}

/**
 * Rebuilds the chat's state in a sandbox that holds none, by re-running the chain. `expected`: the
 * state this host last knew the chat to have (by its recorded id), when it knows one.
 */
export async function resumeState(sandbox: Sandbox, source: ResumeSource, expected: string | undefined, timeoutMs: number, signal: AbortSignal, log: Logger): Promise<ResumeOutcome> {
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
  if (replay.kind !== 'done') return replay.kind === 'partial' ? { ...replay, cause: 'removed' } : replay;
  const older = expected !== undefined && expected !== '' && expected !== chain.target;
  return { kind: 'restored', runs: chain.runs.length, ms: replay.ms, now: replay.now, recorded: chain.target, older, notes: replay.notes, ...replayedOn(replay) };
}

/** How far back: `back` kept calls (the model's `rewind`), or to the state after a run the user chose in the view. */
export type RewindTarget = { back: number } | { afterRun: string } | { startFrom: ChatRun; token?: TokenUse };

/** Where `afterRun` is in the chat's chain: the number of kept calls after it, or why it cannot be gone back to. */
export function callsAfter(chain: Chain, runId: string): { back: number } | { why: string } {
  if (chain.kind === 'broken') return { why: WHY[chain.why] };
  const i = chain.kind === 'ok' ? chain.runs.findIndex((r) => r.runId === runId) : -1;
  if (i < 0) return { why: "that run's state is no longer the one this chat's state grew from (it was not kept, or a reset or going back came after it)" };
  return { back: (chain as Extract<Chain, { kind: 'ok' }>).runs.length - 1 - i };
}

/**
 * Goes back to an earlier state of the chat: the chain up to that point is checked first (a call
 * that cannot go back is refused before anything runs), then the session's sandbox is replaced by
 * a new one and the earlier runs are re-run in it.
 */
export async function rewindState(
  sandbox: Sandbox,
  source: ResumeSource | undefined,
  target: Exclude<RewindTarget, { startFrom: ChatRun }>,
  timeoutMs: number,
  signal: AbortSignal,
  log: Logger,
): Promise<Extract<ResumeOutcome, { kind: 'rewound' | 'partial' | 'interrupted' }>> {
  if (!source || !sandbox.renew) throw new ToolError('invalid_input', "This host keeps no record of the chat's runs, so it cannot go back. Call execute_code without `rewind`.");
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
  if (kept.length === 0) throw new ToolError('invalid_input', "This chat's state holds no kept calls to go back over. Call execute_code without `rewind`.");
  if (back > kept.length) {
    throw new ToolError(
      'invalid_input',
      `This chat's state holds ${plural(kept.length, 'kept call')}, so \`rewind\` can be at most ${kept.length}. Call again with a smaller \`rewind\`, or with \`reset\`: true for an empty state.`,
    );
  }
  const runs = kept.slice(0, kept.length - back);
  await sandbox.renew(signal, 'the chat goes back to an earlier state');
  const replay = await replayChain(sandbox, source, runs, timeoutMs, signal, log);
  if (replay.kind !== 'done') return replay.kind === 'partial' ? { ...replay, cause: 'rewind' } : replay;
  return { kind: 'rewound', back, byUser: 'afterRun' in target, runs: runs.length, ms: replay.ms, now: replay.now, recorded: runs.at(-1)?.state.now ?? '', notes: replay.notes, ...replayedOn(replay) };
}

export function replayedOn(replay: Replay): Replayed {
  return replay.network ? { network: replay.network } : {};
}

export function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}
