import * as fs from 'node:fs';
import * as path from 'node:path';
import { RunRecord } from './runRecord';
import { RECORD_FILE } from './runWriter';

/**
 * What the store knows about the runs on disk, so that neither listing nor pruning has to read
 * every run after every call: the bytes of each run folder and its record. The whole tree is
 * walked once (the first time the store is used, or after the index was found wrong); after
 * that only the runs that change are read.
 */

/** The asynchronous file operations the index uses; tests pass a counting one. */
export interface StoreFs {
  readdir(dir: string, options: { withFileTypes: true }): Promise<fs.Dirent[]>;
  lstat(file: string): Promise<{ size: number; isDirectory(): boolean }>;
  readFile(file: string, encoding: 'utf8'): Promise<string>;
  rm(target: string, options: { recursive: true; force: true }): Promise<void>;
  rmdir(dir: string): Promise<void>;
}

export const nodeStoreFs: StoreFs = fs.promises;

/** Digests come from `sessionDigest()`; anything else must never become a path segment. */
export const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** UTC time to the millisecond, then randomness: sorts by time as a plain string, on every platform. */
export const RUN_ID = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z-[0-9a-f]{6}$/;

export interface IndexedRun {
  /** Bytes of every file in the run's folder, records and streams included. */
  bytes: number;
  /** run.json was there when the run was measured; an unfinished run is measured again before each prune. */
  finished: boolean;
  /** The validated record; undefined when unfinished, or when run.json is missing or invalid (the run is not listed). */
  record: RunRecord | undefined;
}

export interface IndexedRunRef {
  sessionDigest: string;
  runId: string;
  run: IndexedRun;
}

export class StoreIndex {
  /** Session digest → run id → what is known of the run. */
  private readonly sessions = new Map<string, Map<string, IndexedRun>>();
  /** Files under the root outside any run folder (strays); counted, never deleted. */
  otherBytes = 0;

  get totalBytes(): number {
    let total = this.otherBytes;
    for (const runs of this.sessions.values()) for (const run of runs.values()) total += run.bytes;
    return total;
  }

  sessionDigests(): string[] {
    return [...this.sessions.keys()];
  }

  /** Runs of a session, oldest first. */
  runsOf(sessionDigest: string): IndexedRunRef[] {
    const runs = this.sessions.get(sessionDigest);
    if (!runs) return [];
    return [...runs]
      .map(([runId, run]) => ({ sessionDigest, runId, run }))
      .sort((a, b) => compare(a.runId, b.runId));
  }

  /** Every run, oldest first across sessions (run ids start with their time). */
  allRunsOldestFirst(): IndexedRunRef[] {
    return this.sessionDigests()
      .flatMap((s) => this.runsOf(s))
      .sort((a, b) => compare(a.runId, b.runId) || compare(a.sessionDigest, b.sessionDigest));
  }

  get(sessionDigest: string, runId: string): IndexedRun | undefined {
    return this.sessions.get(sessionDigest)?.get(runId);
  }

  set(sessionDigest: string, runId: string, run: IndexedRun): void {
    let runs = this.sessions.get(sessionDigest);
    if (!runs) this.sessions.set(sessionDigest, (runs = new Map()));
    runs.set(runId, run);
  }

  delete(sessionDigest: string, runId: string): void {
    const runs = this.sessions.get(sessionDigest);
    runs?.delete(runId);
    if (runs?.size === 0) this.sessions.delete(sessionDigest);
  }
}

/** Walks the whole store once. A missing root is an empty store. */
export async function scanStore(fsp: StoreFs, root: string): Promise<StoreIndex> {
  const index = new StoreIndex();
  for (const entry of await readDir(fsp, root)) {
    const full = path.join(root, entry.name);
    if (!(entry.isDirectory() && SESSION_ID.test(entry.name))) {
      index.otherBytes += await entryBytes(fsp, full, entry);
      continue;
    }
    for (const runEntry of await readDir(fsp, full)) {
      const runDir = path.join(full, runEntry.name);
      if (!(runEntry.isDirectory() && RUN_ID.test(runEntry.name))) {
        index.otherBytes += await entryBytes(fsp, runDir, runEntry);
        continue;
      }
      const run = await measureRun(fsp, runDir, entry.name, runEntry.name);
      if (run) index.set(entry.name, runEntry.name, run);
    }
  }
  return index;
}

/**
 * Measures one run folder and reads its record (unless `record` is the one just written);
 * undefined when the folder is gone.
 */
export async function measureRun(fsp: StoreFs, dir: string, sessionDigest: string, runId: string, record?: RunRecord): Promise<IndexedRun | undefined> {
  let entries: fs.Dirent[];
  try {
    entries = await fsp.readdir(dir, { withFileTypes: true });
  } catch {
    return undefined;
  }
  let bytes = 0;
  let finished = false;
  for (const entry of entries) {
    if (entry.name === RECORD_FILE && !entry.isDirectory()) finished = true;
    bytes += await entryBytes(fsp, path.join(dir, entry.name), entry);
  }
  if (!finished) return { bytes, finished, record: undefined };
  if (record) return { bytes, finished, record };
  let text: string | undefined;
  try {
    text = await fsp.readFile(path.join(dir, RECORD_FILE), 'utf8');
  } catch {
    text = undefined;
  }
  return { bytes, finished, record: text === undefined ? undefined : parseRecord(text, sessionDigest, runId) };
}

/** A record read back from disk, or undefined when it is corrupt, invalid or not this run's own. */
export function parseRecord(text: string, sessionDigest: string, runId: string): RunRecord | undefined {
  try {
    const parsed = RunRecord.safeParse(JSON.parse(text));
    // A record copied into another run's folder must not speak for that folder.
    if (!parsed.success || parsed.data.runId !== runId || parsed.data.sessionKeyDigest !== sessionDigest) return undefined;
    return parsed.data;
  } catch {
    return undefined;
  }
}

/** Sum of file sizes at or below `full`; symbolic links are counted as themselves, never followed. */
async function entryBytes(fsp: StoreFs, full: string, entry: fs.Dirent): Promise<number> {
  if (!entry.isDirectory()) {
    try {
      return (await fsp.lstat(full)).size;
    } catch {
      return 0; // vanished meanwhile
    }
  }
  let total = 0;
  for (const child of await readDir(fsp, full)) total += await entryBytes(fsp, path.join(full, child.name), child);
  return total;
}

async function readDir(fsp: StoreFs, dir: string): Promise<fs.Dirent[]> {
  try {
    return await fsp.readdir(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The run's start time, from its id. */
export function runTime(runId: string): number {
  const m = RUN_ID.exec(runId)!;
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, +m[7]!);
}
