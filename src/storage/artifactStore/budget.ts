import type { ChatRun } from '../../core/state';
import { compare } from '../storeIndex';

/**
 * Which runs go when the store is over its budget (`prune`). Pure: the store hands in what its
 * index knows and deletes what comes back, in that order.
 *
 * A chat's *live chain* is the kept runs a resume of it would replay, oldest to newest (its
 * state, `stateChain` over the chat's records): a chat in session mode rebuilds its Python state
 * from them in order, so a chain is only worth anything whole. A chain holds the chat's own runs,
 * and, for a chat started from another chat's state whose copies of that chat's records are not
 * there (chatOrigins.ts), that chat's runs it reads. Every other run is *loose*: its files, its
 * record, nobody's state. A run still being written, or another window's younger than the grace,
 * is never deleted.
 *
 * When a call pushed the store over, the chat that made it (the *caller*) pays first, and the
 * rest in this order, until the store fits:
 *
 *   1. the caller's loose runs, oldest first;
 *   2. the caller's chain, whole, when that is enough to make the store fit;
 *   3. the other chats' loose runs: the least recently used chat's first, each chat's oldest first;
 *   4. the caller's chain, whole (when step 2 left it);
 *   5. the other chats' chains, whole, the least recently used chat's first.
 *
 * So one chat's outputs never cost another chat anything while its own can pay, and never cost
 * another chat its state while any chat has loose runs left. Step 2 spares the caller's state when
 * deleting it would not be enough anyway, because other chats' runs must then go regardless.
 *
 * A chain goes whole: its chat's own runs together, and with them every other chain that reads
 * one of them (that chain's root would go while its later runs stay). Another chat's runs a chain
 * reads stay that chat's. A chat is *used* when its newest run began. With no caller (the prune
 * when a window opens), steps 3 and 5 alone. Runs are classed once, when the prune starts: a run
 * a deleted chain read is left for the next prune.
 */

/** A run as the budget sees it. */
export interface BudgetRun {
  chat: string;
  runId: string;
  bytes: number;
  /** It may be deleted now: it is not being written, and not another window's fresh one. */
  deletable: boolean;
}

/** A chat's live chain: its own runs in it, and the other chats' runs it reads (their records, not copies). */
export interface LiveChain {
  chat: string;
  own: readonly string[];
  reads: readonly ChatRun[];
}

export type Eviction =
  | { kind: 'run'; chat: string; runId: string; bytes: number }
  /** Whole chains: `chats` lose their states, `runs` are their own runs. */
  | { kind: 'states'; chats: string[]; runs: ChatRun[]; bytes: number };

export interface BudgetInput {
  runs: readonly BudgetRun[];
  chains: readonly LiveChain[];
  /** The store's bytes past its budget (more than 0). */
  over: number;
  /** The chat whose call pushed the store over. */
  caller?: string;
}

/** The runs to delete, in order, for the store to fit (or all there are to take, when it cannot). */
export function evictionPlan({ runs, chains, over, caller }: BudgetInput): Eviction[] {
  const key = (chat: string, runId: string) => `${chat}/${runId}`;
  const byKey = new Map(runs.map((r) => [key(r.chat, r.runId), r]));
  const chainOf = new Map(chains.map((c) => [c.chat, c]));
  const inChain = new Set(chains.flatMap((c) => [...c.own.map((id) => key(c.chat, id)), ...c.reads.map((r) => key(r.chat, r.run))]));
  const lastUse = new Map<string, string>();
  for (const r of runs) if (compare(r.runId, lastUse.get(r.chat) ?? '') > 0) lastUse.set(r.chat, r.runId);
  const others = [...new Set([...runs.map((r) => r.chat), ...chains.map((c) => c.chat)])]
    .filter((chat) => chat !== caller)
    .sort((x, y) => compare(lastUse.get(x) ?? '', lastUse.get(y) ?? '') || compare(x, y));

  const plan: Eviction[] = [];
  const gone = new Set<string>();
  const lost = new Set<string>();
  let left = over;

  const takeLoose = (chat: string) => {
    const loose = runs.filter((r) => r.chat === chat && r.deletable && !inChain.has(key(r.chat, r.runId))).sort((x, y) => compare(x.runId, y.runId));
    for (const r of loose) {
      if (left <= 0) return;
      plan.push({ kind: 'run', chat, runId: r.runId, bytes: r.bytes });
      gone.add(key(chat, r.runId));
      left -= r.bytes;
    }
  };

  /** The chain of `chat` and every chain that reads a run of one taken with it. */
  const closure = (chat: string) => {
    const chats = [chat];
    const taken: ChatRun[] = [];
    for (let i = 0; i < chats.length; i++) {
      const c = chainOf.get(chats[i]!)!;
      for (const runId of c.own) if (byKey.get(key(c.chat, runId))?.deletable && !gone.has(key(c.chat, runId))) taken.push({ chat: c.chat, run: runId });
      const takenKeys = new Set(taken.map((r) => key(r.chat, r.run)));
      for (const other of chains) {
        if (chats.includes(other.chat) || lost.has(other.chat)) continue;
        if (other.reads.some((r) => takenKeys.has(key(r.chat, r.run)))) chats.push(other.chat);
      }
    }
    const bytes = taken.reduce((sum, r) => sum + byKey.get(key(r.chat, r.run))!.bytes, 0);
    return { chats, runs: taken, bytes };
  };

  const takeChain = (chat: string, onlyIfEnough: boolean) => {
    if (left <= 0 || !chainOf.has(chat) || lost.has(chat)) return;
    const whole = closure(chat);
    if (whole.runs.length === 0 || (onlyIfEnough && whole.bytes < left)) return;
    plan.push({ kind: 'states', ...whole });
    for (const c of whole.chats) lost.add(c);
    for (const r of whole.runs) gone.add(key(r.chat, r.run));
    left -= whole.bytes;
  };

  if (caller !== undefined) {
    takeLoose(caller);
    takeChain(caller, true);
  }
  for (const chat of others) takeLoose(chat);
  if (caller !== undefined) takeChain(caller, false);
  for (const chat of others) takeChain(chat, false);
  return plan;
}
