import { sessionDigest } from '../../core/session';
import type { SessionStates } from '../../core/state';
import { budgetSentence } from '../../core/storageBudget';
import { pruneSentence, type PruneResult } from './pruneResult';
import type { PruneOptions } from './store';

/** What a host knows after a call, for the prune that follows it. */
export interface CallPrune {
  budgetBytes: number;
  /** The chat the call was for: it pays first (budget.ts). */
  sessionKey: string;
  /** The call's run, when it was recorded, and how many files it saved. */
  run?: { runId: string; savedFiles: number };
  /** The host's chats' states: each chat of this host whose state went starts its next call from an empty state. */
  states?: SessionStates;
}

export interface CallPruned {
  result: PruneResult;
  /** For the log: what went, and whose. */
  log?: string;
  /** For the model, after the call's result: what went of its own chat. */
  model?: string;
  /** The call's own run went: its files are no longer there to attach. */
  runDeleted: boolean;
}

/**
 * The prune after a call, as every host makes it (the VS Code tool, the MCP server): the store
 * kept within its budget, the chats of this host whose state went made to start their next call
 * from an empty state (a chat of another window or process goes on from what its sandbox holds,
 * and is told its state could not be rebuilt once that sandbox is gone), and the sentences.
 */
export async function pruneAfterCall(store: { prune(budgetBytes: number, options?: PruneOptions): Promise<PruneResult> }, call: CallPrune): Promise<CallPruned> {
  const caller = sessionDigest(call.sessionKey);
  const result = await store.prune(call.budgetBytes, { caller });
  const lost = new Set(result.chats.filter((c) => c.stateRuns !== undefined).map((c) => c.chat));
  if (call.states && lost.size > 0) {
    for (const key of new Set([call.sessionKey, ...call.states.chats()])) if (lost.has(sessionDigest(key))) call.states.dropState(key);
  }
  const mine = result.chats.find((c) => c.chat === caller);
  const runDeleted = call.run !== undefined && mine !== undefined && mine.runs.includes(call.run.runId);
  const model = mine && budgetSentence({ runs: mine.runs.length, state: mine.stateRuns !== undefined, thisRun: runDeleted, savedFiles: runDeleted ? call.run!.savedFiles : 0 });
  const log = pruneSentence(result, call.budgetBytes);
  return { result, runDeleted, ...(log ? { log } : {}), ...(model ? { model } : {}) };
}
