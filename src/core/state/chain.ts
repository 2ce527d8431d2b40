/**
 * A chat's chain of states, from its run records alone: each kept run names the state it started
 * from and the one it left, so the chain from an empty state to the last one is followed link by
 * link, and a missing or changed link is a broken chain, never something else restored. Pure: the
 * view, the store and the rebuilds all read chains through here.
 */
import { MAX_REPLAYED_RUNS } from './outcome';
import { WHY } from './sentences';

/** A run of a chat, by the chat's store digest and the run's id. */
export interface ChatRun {
  chat: string;
  run: string;
}

/**
 * A session-mode call's state as its run record keeps it (the one shape: the call's report, the
 * record written and read back, and the chain all use it).
 */
export interface StateRecord {
  /** It started from an empty state, as asked. */
  reset: boolean;
  /** Its state was kept for the next call. */
  kept: boolean;
  /** The state it started from and the one the next call started from ('' : empty). */
  from?: string;
  now?: string;
  /** The sandbox stopped while it ran. */
  ended?: boolean;
  /** It started from the state another chat had after that chat's run: the chain goes on there. */
  origin?: ChatRun;
}

/** One recorded session-mode run, as the chain needs it. */
export interface StateRun {
  runId: string;
  program: string;
  /** The directory it ran in, inside the sandbox: a replay runs it there again. */
  workDir?: string;
  /** Workspace files it was given (shared again from the workspace as it is now). */
  filesIn: readonly string[];
  state: StateRecord;
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


/** Where `afterRun` is in the chat's chain: the number of kept calls after it, or why it cannot be gone back to. */
export function callsAfter(chain: Chain, runId: string): { back: number } | { why: string } {
  if (chain.kind === 'broken') return { why: WHY[chain.why] };
  const i = chain.kind === 'ok' ? chain.runs.findIndex((r) => r.runId === runId) : -1;
  if (i < 0) return { why: "that run's state is no longer the one this chat's state grew from (it was not kept, or a reset or going back came after it)" };
  return { back: (chain as Extract<Chain, { kind: 'ok' }>).runs.length - 1 - i };
}
