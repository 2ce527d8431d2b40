import type { ChatRun, StateRun } from '../core/resume';
import type { StateSeal } from './stateSeal';
import { RUN_ID, SESSION_ID } from './storeIndex';

/**
 * A chat started from another chat's state ("Start a New Chat from Here" in the view): its first
 * such call's record names, under the store's seal, the chat and the run it started after. Its
 * chain of kept runs goes on in that chat's records, so a resume or a rewind of the new chat
 * re-runs the other chat's runs up to that one, then its own.
 *
 * The person hands the model a token for the run (the model passes it as `startFrom`): made and
 * checked by this store's key alone, so a model cannot name another chat's run by guessing.
 */

/** Past this many chats started one from another, the chain is not followed further (its link is then missing). */
const MAX_ORIGIN_DEPTH = 16;
const PURPOSE = 'start-from';

/** The token for starting a new chat from the state after `run` of `chat`. */
export function startToken(seal: StateSeal, { chat, run }: ChatRun): string {
  return `${chat}.${run}.${seal.tag(PURPOSE, [chat, run])}`;
}

/** The chat and run a token names, when this store made it; undefined for anything else. */
export function readStartToken(seal: StateSeal, token: string): ChatRun | undefined {
  const parts = token.trim().split('.');
  if (parts.length !== 3) return undefined;
  const [chat, run, tag] = parts as [string, string, string];
  if (!SESSION_ID.test(chat) || !RUN_ID.test(run)) return undefined;
  return seal.checkTag(PURPOSE, [chat, run], tag) ? { chat, run } : undefined;
}

/**
 * The chat's session runs, oldest first, with each run it started another chat's state from
 * preceded by that chat's runs up to the one it started after (themselves so stitched). `own`
 * reads one chat's records. An unsealed record's origin is not followed: the chain refuses it.
 */
export async function stitchedStateRuns(own: (chat: string) => Promise<StateRun[]>, chat: string, depth = 0): Promise<StateRun[]> {
  const runs = await own(chat);
  if (depth >= MAX_ORIGIN_DEPTH) return runs;
  const out: StateRun[] = [];
  for (const run of runs) {
    const origin = run.state.origin;
    if (origin && run.sealed) out.push(...upTo(await stitchedStateRuns(own, origin.chat, depth + 1), origin.run));
    out.push(run);
  }
  return out;
}

/** The runs up to and with `runId`; none when it is not among them (the chain's link is then missing). */
function upTo(runs: StateRun[], runId: string): StateRun[] {
  const i = runs.findIndex((r) => r.runId === runId);
  return i < 0 ? [] : runs.slice(0, i + 1);
}
