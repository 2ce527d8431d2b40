import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { stateChain, type ChatRun, type StateRun } from '../core/state';
import type { RunRecord } from './runRecord';
import { writeFileAtomic } from './runWriter';
import type { StateSeal } from './stateSeal';
import { parseRecord } from './storeIndex';

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
 * The token the person hands the model to start such a chat: startTokens.ts.
 */

/** Past this many chats started one from another, the chain is not followed further (its link is then missing). */
const MAX_ORIGIN_DEPTH = 16;

/** A session run as the store reads it: the chain's view of it, and its record (to copy). */
export type StoredStateRun = StateRun & { record: RunRecord };

/** How the chain reads a chat's runs: its records, and the copies kept in one run's folder. */
export interface OriginReader {
  own(chat: string): Promise<StoredStateRun[]>;
  /** The copies in the run folder of `chat`'s `runId` that started from `origin`, oldest first; undefined when there are none that end there. */
  copies(chat: string, runId: string, origin: ChatRun): StoredStateRun[] | undefined;
}

/**
 * The chat's session runs, oldest first, with each run it started another chat's state from
 * preceded by the runs it re-ran: their copies, else that chat's runs up to the one it started
 * after (themselves so stitched). An unsealed record's origin is not followed: the chain refuses it.
 */
export function stitchedStateRuns(reader: OriginReader, chat: string): Promise<StoredStateRun[]> {
  return stitch(reader, chat, new Map(), new Set());
}

/**
 * Each chat is stitched once per read (`done`), and a chat met again while it is being stitched
 * (one started from itself, a loop of records) is a missing link there, not a walk without end.
 */
async function stitch(reader: OriginReader, chat: string, done: Map<string, StoredStateRun[]>, visiting: Set<string>): Promise<StoredStateRun[]> {
  const known = done.get(chat);
  if (known) return known;
  const runs = await reader.own(chat);
  if (visiting.has(chat) || visiting.size >= MAX_ORIGIN_DEPTH) return runs;
  visiting.add(chat);
  const out: StoredStateRun[] = [];
  for (const run of runs) {
    const origin = run.state.origin;
    if (origin && run.sealed) {
      const before = reader.copies(chat, run.runId, origin) ?? upTo(await stitch(reader, origin.chat, done, visiting), origin.run);
      out.push(...before.map((r) => ({ ...r, otherChat: true })));
    }
    out.push(run);
  }
  visiting.delete(chat);
  done.set(chat, out);
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
    copies: (chat, runId, origin) => readOrigin(runDir(chat, runId), origin, asRun),
  };
}

const ORIGIN_DIR = 'origin';
/** Larger than any record the store writes (a record keeps each stream's shown part only). */
const MAX_COPY_BYTES = 16 * 1024 * 1024;

/**
 * Copies into `runDir` (the folder of the run that started from `origin`) the records of the
 * kept runs that rebuilt its state, as they are: the chain of the other chat's runs up to
 * `origin.run`. Nothing when there is no such chain (the call was refused by then anyway).
 * Written whole in a folder of its own, then put in place: a half-written set is never read.
 */
export async function keepOrigin(reader: OriginReader, runDir: string, origin: ChatRun): Promise<void> {
  const theirs = upTo(await stitchedStateRuns(reader, origin.chat), origin.run);
  const chain = stateChain(theirs);
  if (chain.kind !== 'ok') return;
  const tmp = path.join(runDir, `${ORIGIN_DIR}.${randomBytes(4).toString('hex')}.tmp`);
  fs.mkdirSync(tmp);
  try {
    for (const [i, run] of (chain.runs as StoredStateRun[]).entries()) {
      writeFileAtomic(path.join(tmp, `${String(i + 1).padStart(4, '0')}.json`), JSON.stringify(run.record));
    }
    fs.renameSync(tmp, path.join(runDir, ORIGIN_DIR));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * The copies in `runDir`, oldest first, each checked as a record is; undefined when there are
 * none, or they are not whole (a copy that does not read as a record) or do not end at `origin`:
 * then the chain is followed into the other chat's records. Only a folder of regular files is
 * read (never through a link, never waiting on a FIFO).
 */
function readOrigin(runDir: string, origin: ChatRun, toRun: (record: RunRecord) => StoredStateRun): StoredStateRun[] | undefined {
  const dir = path.join(runDir, ORIGIN_DIR);
  let names: string[];
  try {
    if (!fs.lstatSync(dir).isDirectory()) return undefined;
    names = fs.readdirSync(dir).filter((n) => /^\d{4}\.json$/.test(n)).sort();
  } catch {
    return undefined;
  }
  const runs: StoredStateRun[] = [];
  for (const name of names) {
    const text = readRegularFile(path.join(dir, name), MAX_COPY_BYTES);
    let claimed: { sessionKeyDigest?: unknown; runId?: unknown } | undefined;
    try {
      claimed = text === undefined ? undefined : ((JSON.parse(text) ?? {}) as typeof claimed);
    } catch {
      claimed = undefined;
    }
    const record = typeof claimed?.sessionKeyDigest === 'string' && typeof claimed.runId === 'string' ? parseRecord(text!, claimed.sessionKeyDigest, claimed.runId) : undefined;
    if (!record?.state) return undefined;
    runs.push(toRun(record));
  }
  const last = runs.at(-1)?.record;
  return last && last.sessionKeyDigest === origin.chat && last.runId === origin.run ? runs : undefined;
}

/** The file's text when it is a regular file of at most `max` bytes; undefined otherwise. */
function readRegularFile(file: string, max: number): string | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile() || stat.size > max) return undefined;
    return fs.readFileSync(fd, 'utf8');
  } catch {
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
}

/** The runs up to and with `runId`; none when it is not among them (the chain's link is then missing). */
function upTo<T extends StateRun>(runs: T[], runId: string): T[] {
  const i = runs.findIndex((r) => r.runId === runId);
  return i < 0 ? [] : runs.slice(0, i + 1);
}
