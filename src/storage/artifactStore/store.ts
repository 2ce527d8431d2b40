import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RunRecord } from '../runRecord';
import { FILES_DIR, RECORD_FILE, RunWriter, STREAM_FILES, resolveInside } from '../runWriter';
import type { ChatRun, StartTokenReading, StateRun } from '../../core/state';
import { keepOrigin, originReader, stitchedStateRuns, type OriginReader } from '../chatOrigins';
import { cardToken, readCardToken } from '../cardTokens';
import { giveBackStartToken, readStartToken, startToken, takeStartToken } from '../startTokens';
import { StateSeal } from '../stateSeal';
import { RUN_ID, SESSION_ID, StoreIndex, compare, measureRun, nodeStoreFs, parseRecord, runTime, scanStore, type StoreFs } from '../storeIndex';
import { evictionPlan, type BudgetRun } from './budget';
import { liveChains } from './chains';
import { StoreEvents, type Disposable } from './events';
import { RunFolders } from './folders';
import { readable, sessionSummaries, type SessionSummary } from './listing';
import { PruneTally, type PruneResult } from './pruneResult';

/**
 * Files a program produced, and a record of its run, on plain disk (folders.ts has the layout).
 * The root is the host's choice and must be somewhere the agent's own file tools do not write:
 * these bytes were authored by model-written code, so the store never overwrites and never lets
 * a name leave its run's folder.
 *
 * Listing and pruning run on the extension host after every call, so they are asynchronous and
 * answered from an index: the disk is walked the first time the store is used (and after
 * `reload`, or when an update of the index failed); after that a finished run is measured once,
 * and a deleted one is forgotten. Runs another window sharing the root adds later are seen after
 * `reload` (its unfinished runs known to the index are measured again before each prune). Which
 * runs a prune deletes: budget.ts.
 */

export interface ArtifactStoreOptions {
  /** Milliseconds since the epoch; tests pass a fake clock. */
  now?: () => number;
  /**
   * A run folder without run.json younger than this is left alone by `prune`: another window
   * sharing the root may still be writing it. Older ones are leftovers of a crash.
   */
  unfinishedGraceMs?: number;
  /** The file operations behind listing and pruning; tests count them. */
  fs?: StoreFs;
}

export interface PruneOptions {
  /** The chat (its digest) whose call the prune follows: it pays first (budget.ts). */
  caller?: string;
}

export class ArtifactStore {
  private readonly now: () => number;
  private readonly unfinishedGraceMs: number;
  private readonly fsp: StoreFs;
  private readonly active = new Set<string>();
  private readonly events = new StoreEvents();
  private lastStamp = 0;
  /** Undefined until the first walk, and again when it can no longer be trusted. */
  private index: StoreIndex | undefined;
  /** Every operation on the index runs after the previous one, so none sees another half done. */
  private tail: Promise<unknown> = Promise.resolve();
  private readonly stateSeal: StateSeal;
  private readonly folders: RunFolders;

  constructor(
    readonly root: string,
    options: ArtifactStoreOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.unfinishedGraceMs = options.unfinishedGraceMs ?? 24 * 60 * 60 * 1000;
    this.fsp = options.fs ?? nodeStoreFs;
    this.stateSeal = new StateSeal(root);
    this.folders = new RunFolders(root, this.fsp);
  }

  /**
   * Whether any window of this root keeps records of the chat: read from the disk, not this
   * window's index, which does not know a chat another window began since it was loaded.
   */
  async hasSession(sessionDigest: string): Promise<boolean> {
    try {
      return (await this.fsp.lstat(this.sessionDir(sessionDigest))).isDirectory();
    } catch {
      return false;
    }
  }

  /** Creates the run's folder and returns the writer that owns it until `finish` or `discard`. */
  beginRun(sessionDigest: string, sessionLabel: string): RunWriter {
    const sessionDir = this.sessionDir(sessionDigest);
    fs.mkdirSync(sessionDir, { recursive: true });
    for (;;) {
      // A logical clock: ids from one store strictly increase even within one millisecond.
      const stamp = Math.max(this.now(), this.lastStamp + 1);
      this.lastStamp = stamp;
      const runId = `${new Date(stamp).toISOString().replace(/[-:.]/g, '')}-${randomBytes(3).toString('hex')}`;
      const dir = path.join(sessionDir, runId);
      try {
        // Not recursive: EEXIST means another process took the id, so take another.
        fs.mkdirSync(dir);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw e;
      }
      fs.mkdirSync(path.join(dir, FILES_DIR));
      const key = `${sessionDigest}/${runId}`;
      this.active.add(key);
      this.index?.set(sessionDigest, runId, { bytes: 0, finished: false, record: undefined });
      return new RunWriter(sessionDigest, sessionLabel, runId, dir, (record) => {
        this.active.delete(key);
        if (record) {
          // First the copies a chat started from another's state keeps (chatOrigins.ts): a later read of its runs waits for them.
          const origin = record.state?.origin && this.stateSeal.check(record) ? record.state.origin : undefined;
          if (origin) void this.serial(async () => keepOrigin(this.originReader(await this.loaded()), dir, origin)).catch(() => undefined);
          void this.serial(() => this.remeasure(sessionDigest, runId, record)).catch(() => undefined);
          this.events.changed();
          if (record.files.length > 0) this.events.filesAdded(record.files.length);
        } else {
          this.index?.delete(sessionDigest, runId);
        }
      }, this.stateSeal);
    }
  }

  /** Sessions with at least one readable run, the most recently used first. */
  listSessions(): Promise<SessionSummary[]> {
    return this.serial(async () => sessionSummaries(await this.loaded()));
  }

  /** Finished runs of a session, newest first. A missing or corrupt run.json hides that run; it never throws. */
  listRuns(sessionDigest: string): Promise<RunRecord[]> {
    this.sessionDir(sessionDigest);
    return this.serial(async () => readable(await this.loaded(), sessionDigest));
  }

  /**
   * A chat's session-mode runs, oldest first, for a resume to follow their chain: each says
   * whether its seal holds (the record is this store's, for this chat, unchanged). A chat started
   * from another's state has that chat's runs before its own (chatOrigins.ts).
   */
  stateRuns(sessionDigest: string): Promise<StateRun[]> {
    return this.serial(async () => (await stitchedStateRuns(this.originReader(await this.loaded()), sessionDigest)).map(({ record: _, ...run }) => run));
  }

  /** The token the person hands a new chat to start from the state after this run (startTokens.ts). */
  startToken(sessionDigest: string, runId: string): string {
    return startToken(this.stateSeal, { chat: sessionDigest, run: runId }, this.now());
  }

  /** The chat and run a start token names while it is good and untaken; else why not. */
  readStartToken(token: string): StartTokenReading {
    return readStartToken(this.stateSeal, this.root, token, this.now());
  }

  /** Takes a good token for the chat `sessionDigest`: true once, for the first chat that takes it (in any window of this store). */
  takeStartToken(token: string, sessionDigest: string): boolean {
    return takeStartToken(this.stateSeal, this.root, token, sessionDigest, this.now());
  }

  /** Gives back a token the chat took but did not start from (its replay was interrupted). */
  giveBackStartToken(token: string, sessionDigest: string): void {
    giveBackStartToken(this.stateSeal, this.root, token, sessionDigest);
  }

  /** What a run's card in the chat holds to ask for that run's files (cardTokens.ts). */
  cardToken(sessionDigest: string, runId: string): string {
    return cardToken(this.stateSeal, { chat: sessionDigest, run: runId });
  }

  /** The chat and run a card token names, when this store made it. */
  readCardToken(token: string): ChatRun | undefined {
    return readCardToken(this.stateSeal, token);
  }

  /** Reads chats' session runs from the index, and the copies a run folder keeps of another chat's. */
  private originReader(index: StoreIndex): OriginReader {
    return originReader((chat) => readable(index, chat).reverse(), (chat, runId) => this.runDir(chat, runId), this.stateSeal);
  }

  /** One run's record read from disk now (not from the index), or undefined when it is missing or invalid. */
  readRun(sessionDigest: string, runId: string): RunRecord | undefined {
    // Outside the try: an invalid id is a bug to surface, not a corrupt record to hide.
    const file = path.join(this.runDir(sessionDigest, runId), RECORD_FILE);
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
    return parseRecord(text, sessionDigest, runId);
  }

  runDir(sessionDigest: string, runId: string): string {
    return this.folders.runDir(sessionDigest, runId);
  }

  /** Where a stored file is, for opening it; the name is held to the same rules as when it was written. */
  filePath(sessionDigest: string, runId: string, name: string): string {
    return resolveInside(path.join(this.runDir(sessionDigest, runId), FILES_DIR), name);
  }

  /** The whole stream kept beside a run, when it was cut for the model. */
  async streamFile(sessionDigest: string, runId: string, stream: keyof typeof STREAM_FILES): Promise<string | undefined> {
    const file = path.join(this.runDir(sessionDigest, runId), STREAM_FILES[stream]);
    return (await this.folders.exists(file)) ? file : undefined;
  }

  /** False when there was nothing to delete, or the run is still being written. */
  deleteRun(sessionDigest: string, runId: string): Promise<boolean> {
    const dir = this.runDir(sessionDigest, runId);
    return this.serial(async () => {
      if (this.active.has(`${sessionDigest}/${runId}`) || !(await this.folders.exists(dir))) return false;
      await this.removeRun(sessionDigest, runId);
      await this.folders.removeSessionIfEmpty(sessionDigest);
      this.events.changed();
      return true;
    });
  }

  /** Deletes a session's runs except any still being written; returns how many were deleted. */
  deleteSession(sessionDigest: string): Promise<number> {
    this.sessionDir(sessionDigest);
    return this.serial(async () => {
      const deleted = await this.deleteSessionQuietly(sessionDigest);
      if (deleted > 0) this.events.changed();
      return deleted;
    });
  }

  /** Deletes every session's runs except any still being written; returns how many were deleted. */
  clear(): Promise<number> {
    return this.serial(async () => {
      let deleted = 0;
      // The disk, not the index: "delete all" includes runs another window added since the walk.
      for (const name of await this.folders.names(this.root)) if (SESSION_ID.test(name)) deleted += await this.deleteSessionQuietly(name);
      if (deleted > 0) this.events.changed();
      return deleted;
    });
  }

  /** Bytes of every file under the root, records and streams included. */
  totalBytes(): Promise<number> {
    return this.serial(async () => (await this.remeasureUnfinished(await this.loaded())).totalBytes);
  }

  /**
   * Deletes whole runs until the store fits `budgetBytes`, in the order budget.ts sets: the
   * caller's runs first, a chat's state whole or not at all. Runs still being written are never
   * touched, so the result may stay over budget. Reads only the runs that are unfinished or
   * deleted, and, over budget, the copies chats keep of others' records; the rest comes from the index.
   */
  prune(budgetBytes: number, { caller }: PruneOptions = {}): Promise<PruneResult> {
    if (caller !== undefined) this.sessionDir(caller);
    return this.serial(async () => {
      const index = await this.remeasureUnfinished(await this.loaded());
      const total = index.totalBytes;
      if (total <= budgetBytes) return { deletedRuns: 0, freedBytes: 0, totalBytes: total, chats: [] };
      const runs: BudgetRun[] = index.allRunsOldestFirst().map(({ sessionDigest: chat, runId, run }) => ({
        chat,
        runId,
        bytes: run.bytes,
        deletable: !this.active.has(`${chat}/${runId}`) && (run.finished || this.now() - runTime(runId) >= this.unfinishedGraceMs),
      }));
      const chains = await liveChains(this.originReader(index), index.sessionDigests());
      const plan = evictionPlan({ runs, chains, over: total - budgetBytes, ...(caller !== undefined ? { caller } : {}) });
      const labels = new Map(index.sessionDigests().map((chat) => [chat, readable(index, chat)[0]?.sessionLabel ?? '']));
      const tally = new PruneTally(total, (chat) => labels.get(chat) ?? '');
      for (const step of plan) {
        for (const { chat, run: runId } of step.kind === 'run' ? [{ chat: step.chat, run: step.runId }] : step.runs) {
          const bytes = index.get(chat, runId)?.bytes ?? 0;
          const gone = await this.removeRun(chat, runId);
          await this.folders.removeSessionIfEmpty(chat);
          tally.deleted(chat, runId, bytes, gone, step.kind === 'states');
        }
        if (step.kind === 'states') for (const chat of step.chats) tally.stateLost(chat);
      }
      const result = tally.done();
      if (result.deletedRuns > 0) this.events.changed();
      return result;
    });
  }

  /** Forgets the index and walks the disk again (the view's Refresh: shows runs other windows added). */
  reload(): Promise<void> {
    return this.serial(async () => {
      this.index = undefined;
      await this.loaded();
      this.events.changed();
    });
  }

  /** Called after runs are added or deleted, for a view to refresh. */
  onDidChange(listener: () => void): Disposable {
    return this.events.onDidChange(listener);
  }

  /** Called when a finished run kept files, with how many (the view's badge). */
  onDidAddFiles(listener: (count: number) => void): Disposable {
    return this.events.onDidAddFiles(listener);
  }

  private serial<T>(op: () => Promise<T>): Promise<T> {
    const result = this.tail.then(async () => {
      try {
        return await op();
      } catch (e) {
        // Whatever the index says now may not be what is on disk: walk again next time.
        this.index = undefined;
        throw e;
      }
    });
    this.tail = result.catch(() => undefined);
    return result;
  }

  private async loaded(): Promise<StoreIndex> {
    this.index ??= await scanStore(this.fsp, this.root);
    return this.index;
  }

  /** Unfinished runs (this window's in progress, another's, a crash's leftovers) grow or finish: measure them again. */
  private async remeasureUnfinished(index: StoreIndex): Promise<StoreIndex> {
    for (const { sessionDigest, runId, run } of index.allRunsOldestFirst()) {
      if (!run.finished) await this.remeasure(sessionDigest, runId);
    }
    return index;
  }

  /** Measures one run into the index (`record`: the one its writer just wrote); a folder that is gone is forgotten. */
  private async remeasure(sessionDigest: string, runId: string, record?: RunRecord): Promise<void> {
    const index = this.index;
    if (!index) return; // the next walk will see it
    const before = index.get(sessionDigest, runId);
    const run = await measureRun(this.fsp, this.runDir(sessionDigest, runId), sessionDigest, runId, record);
    // Discarded while it was measured: the writer already took it out of the index.
    if (index.get(sessionDigest, runId) !== before) return;
    if (run) index.set(sessionDigest, runId, run);
    else index.delete(sessionDigest, runId);
  }

  private sessionDir(sessionDigest: string): string {
    return this.folders.sessionDir(sessionDigest);
  }

  /** Deletes a run's folder and forgets it; true when the folder was already gone. */
  private async removeRun(sessionDigest: string, runId: string): Promise<boolean> {
    const gone = await this.folders.removeRun(sessionDigest, runId);
    this.index?.delete(sessionDigest, runId);
    return gone;
  }

  private async deleteSessionQuietly(sessionDigest: string): Promise<number> {
    let deleted = 0;
    const runIds = (await this.folders.names(this.sessionDir(sessionDigest))).filter((n) => RUN_ID.test(n)).sort(compare);
    for (const runId of runIds) {
      if (this.active.has(`${sessionDigest}/${runId}`)) continue;
      await this.removeRun(sessionDigest, runId);
      deleted++;
    }
    await this.folders.removeSessionIfEmpty(sessionDigest);
    return deleted;
  }
}
