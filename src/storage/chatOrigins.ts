import * as fs from 'node:fs';
import * as path from 'node:path';
import { stateChain, type ChatRun, type StateRun } from '../core/resume';
import type { RunRecord } from './runRecord';
import { writeFileAtomic } from './runWriter';
import type { StateSeal } from './stateSeal';
import { RUN_ID, SESSION_ID, parseRecord } from './storeIndex';

/**
 * A chat started from another chat's state ("Start a New Chat from Here" in the view): its first
 * such call's record names, under the store's seal, the chat and the run it started after. Its
 * chain of kept runs goes on in that chat's records, so a resume or a rewind of the new chat
 * re-runs the other chat's runs up to that one, then its own.
 *
 * Once that call's record is written, the records of the other chat's runs it re-ran are copied
 * into its run folder (`origin/`, as they are, under their own seals): the new chat's chain then
 * reads them there, so deleting the other chat, or its runs going to the storage budget, takes
 * nothing from the new one. Until the copies are there (and for a record whose copies could not
 * be made) the chain is followed into the other chat's records.
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

/** A session run as the store reads it: the chain's view of it, and its record (to copy). */
export type StoredStateRun = StateRun & { record: RunRecord };

/** How the chain reads a chat's runs: its records, and the copies kept in one run's folder. */
export interface OriginReader {
  own(chat: string): Promise<StoredStateRun[]>;
  /** The copies in the run folder of `chat`'s `runId`, oldest first; undefined when there are none. */
  copies(chat: string, runId: string): StoredStateRun[] | undefined;
}

/**
 * The chat's session runs, oldest first, with each run it started another chat's state from
 * preceded by the runs it re-ran: their copies, else that chat's runs up to the one it started
 * after (themselves so stitched). An unsealed record's origin is not followed: the chain refuses it.
 */
export async function stitchedStateRuns(reader: OriginReader, chat: string, depth = 0): Promise<StoredStateRun[]> {
  const runs = await reader.own(chat);
  if (depth >= MAX_ORIGIN_DEPTH) return runs;
  const out: StoredStateRun[] = [];
  for (const run of runs) {
    const origin = run.state.origin;
    if (origin && run.sealed) out.push(...(reader.copies(chat, run.runId) ?? upTo(await stitchedStateRuns(reader, origin.chat, depth + 1), origin.run)));
    out.push(run);
  }
  return out;
}

/** The reader over a store: `records(chat)` its chat's records oldest first, `runDir` a run's folder, `seal` the store's. */
export function originReader(records: (chat: string) => RunRecord[], runDir: (chat: string, runId: string) => string, seal: StateSeal): OriginReader {
  const asRun = (r: RunRecord): StoredStateRun => ({
    runId: r.runId,
    program: r.program,
    ...(r.workDir ? { workDir: r.workDir } : {}),
    filesIn: r.filesIn,
    durationMs: r.durationMs,
    state: r.state!,
    sealed: seal.check(r),
    record: r,
  });
  return {
    own: async (chat) => records(chat).flatMap((r) => (r.state ? [asRun(r)] : [])),
    copies: (chat, runId) => readOrigin(runDir(chat, runId), asRun),
  };
}

const ORIGIN_DIR = 'origin';

/**
 * Copies into `runDir` (the folder of the run that started from `origin`) the records of the
 * kept runs that rebuilt its state, as they are: the chain of the other chat's runs up to
 * `origin.run`. Nothing when there is no such chain (the call was refused by then anyway).
 */
export async function keepOrigin(reader: OriginReader, runDir: string, origin: ChatRun): Promise<void> {
  const theirs = upTo(await stitchedStateRuns(reader, origin.chat), origin.run);
  const chain = stateChain(theirs);
  if (chain.kind !== 'ok') return;
  const dir = path.join(runDir, ORIGIN_DIR);
  fs.mkdirSync(dir);
  for (const [i, run] of (chain.runs as StoredStateRun[]).entries()) {
    writeFileAtomic(path.join(dir, `${String(i + 1).padStart(4, '0')}.json`), JSON.stringify(run.record));
  }
}

/** The copies in `runDir`, oldest first, each checked as a record is; undefined when there are none. */
function readOrigin(runDir: string, toRun: (record: RunRecord) => StoredStateRun): StoredStateRun[] | undefined {
  const dir = path.join(runDir, ORIGIN_DIR);
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => /^\d{4}\.json$/.test(n)).sort();
  } catch {
    return undefined;
  }
  const runs: StoredStateRun[] = [];
  for (const name of names) {
    let text: string;
    let claimed: { sessionKeyDigest?: unknown; runId?: unknown };
    try {
      text = fs.readFileSync(path.join(dir, name), 'utf8');
      claimed = (JSON.parse(text) ?? {}) as typeof claimed;
    } catch {
      continue;
    }
    // A copy that does not parse is a missing link: the chain stops there with a sentence.
    const record = typeof claimed.sessionKeyDigest === 'string' && typeof claimed.runId === 'string' ? parseRecord(text, claimed.sessionKeyDigest, claimed.runId) : undefined;
    if (record?.state) runs.push(toRun(record));
  }
  return runs.length ? runs : undefined;
}

/** The runs up to and with `runId`; none when it is not among them (the chain's link is then missing). */
function upTo<T extends StateRun>(runs: T[], runId: string): T[] {
  const i = runs.findIndex((r) => r.runId === runId);
  return i < 0 ? [] : runs.slice(0, i + 1);
}
