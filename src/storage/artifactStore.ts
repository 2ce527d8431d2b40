import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ToolError } from '../core/errors';
import { SNIFF_BYTES, sniffImageType } from '../core/files/magic';
import { classifyName, quote } from '../core/files/names';
import { RunRecord, type RunOutcome, type StoredFile } from './runRecord';

export { RunRecord, StoredFile, type RunOutcome } from './runRecord';

/**
 * Files a program produced, and a record of its run, on plain disk:
 *
 *     root/<sessionDigest>/<runId>/run.json
 *     root/<sessionDigest>/<runId>/files/<name>
 *     root/<sessionDigest>/<runId>/stdout.txt, stderr.txt   (whole streams, when cut for the model)
 *
 * The root is the host's choice and must be somewhere the agent's own file tools do not write:
 * these bytes were authored by model-written code, so the store never overwrites and never lets
 * a name leave its run's folder.
 */

export const RECORD_FILE = 'run.json';
export const FILES_DIR = 'files';
export const STREAM_FILES = { stdout: 'stdout.txt', stderr: 'stderr.txt' } as const;

/** Digests come from `sessionDigest()`; anything else must never become a path segment. */
const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** UTC time to the millisecond, then randomness: sorts by time as a plain string, on every platform. */
const RUN_ID = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z-[0-9a-f]{6}$/;

export interface SessionSummary {
  sessionDigest: string;
  /** From the session's newest run. */
  sessionLabel: string;
  runCount: number;
  latestRunId: string;
  latestStartedAt: string;
}

export interface PruneResult {
  deletedRuns: number;
  freedBytes: number;
  totalBytes: number;
}

export interface ArtifactStoreOptions {
  /** Milliseconds since the epoch; tests pass a fake clock. */
  now?: () => number;
  /**
   * A run folder without run.json younger than this is left alone by `prune`: another window
   * sharing the root may still be writing it. Older ones are leftovers of a crash.
   */
  unfinishedGraceMs?: number;
}

export interface Disposable {
  dispose(): void;
}

export class ArtifactStore {
  private readonly now: () => number;
  private readonly unfinishedGraceMs: number;
  private readonly active = new Set<string>();
  private readonly listeners = new Set<() => void>();
  private lastStamp = 0;

  constructor(
    readonly root: string,
    options: ArtifactStoreOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.unfinishedGraceMs = options.unfinishedGraceMs ?? 24 * 60 * 60 * 1000;
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
      return new RunWriter(sessionDigest, sessionLabel, runId, dir, (changed) => {
        this.active.delete(key);
        if (changed) this.emit();
      });
    }
  }

  /** Sessions with at least one readable run, the most recently used first. */
  listSessions(): SessionSummary[] {
    const sessions: SessionSummary[] = [];
    for (const sessionDigest of readDirNames(this.root).filter((n) => SESSION_ID.test(n))) {
      const runs = this.listRuns(sessionDigest);
      if (runs.length === 0) continue;
      const newest = runs[0]!;
      sessions.push({ sessionDigest, sessionLabel: newest.sessionLabel, runCount: runs.length, latestRunId: newest.runId, latestStartedAt: newest.startedAt });
    }
    // Run ids sort by time; startedAt strings need not (fractions of a second are optional).
    return sessions.sort((a, b) => compare(b.latestRunId, a.latestRunId));
  }

  /** Finished runs of a session, newest first. A missing or corrupt run.json hides that run; it never throws. */
  listRuns(sessionDigest: string): RunRecord[] {
    return this.runIds(sessionDigest)
      .reverse()
      .map((runId) => this.readRun(sessionDigest, runId))
      .filter((r): r is RunRecord => r !== undefined);
  }

  readRun(sessionDigest: string, runId: string): RunRecord | undefined {
    // Outside the try: an invalid id is a bug to surface, not a corrupt record to hide.
    const file = path.join(this.runDir(sessionDigest, runId), RECORD_FILE);
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
    try {
      const parsed = RunRecord.safeParse(JSON.parse(text));
      // A record copied into another run's folder must not speak for that folder.
      if (!parsed.success || parsed.data.runId !== runId || parsed.data.sessionKeyDigest !== sessionDigest) return undefined;
      return parsed.data;
    } catch {
      return undefined;
    }
  }

  runDir(sessionDigest: string, runId: string): string {
    if (!RUN_ID.test(runId)) throw new Error(`not a run id: ${JSON.stringify(runId)}`);
    return path.join(this.sessionDir(sessionDigest), runId);
  }

  /** Where a stored file is, for opening it; the name is held to the same rules as when it was written. */
  filePath(sessionDigest: string, runId: string, name: string): string {
    return resolveInside(path.join(this.runDir(sessionDigest, runId), FILES_DIR), name);
  }

  /** The whole stream kept beside a run, when it was cut for the model. */
  streamFile(sessionDigest: string, runId: string, stream: keyof typeof STREAM_FILES): string | undefined {
    const file = path.join(this.runDir(sessionDigest, runId), STREAM_FILES[stream]);
    return fs.existsSync(file) ? file : undefined;
  }

  /** False when there was nothing to delete, or the run is still being written. */
  deleteRun(sessionDigest: string, runId: string): boolean {
    const dir = this.runDir(sessionDigest, runId);
    if (this.active.has(`${sessionDigest}/${runId}`) || !fs.existsSync(dir)) return false;
    fs.rmSync(dir, { recursive: true, force: true });
    this.removeIfEmpty(this.sessionDir(sessionDigest));
    this.emit();
    return true;
  }

  /** Deletes a session's runs except any still being written; returns how many were deleted. */
  deleteSession(sessionDigest: string): number {
    const deleted = this.deleteSessionQuietly(sessionDigest);
    if (deleted > 0) this.emit();
    return deleted;
  }

  /** Deletes every session's runs except any still being written; returns how many were deleted. */
  clear(): number {
    let deleted = 0;
    for (const name of readDirNames(this.root).filter((n) => SESSION_ID.test(n))) deleted += this.deleteSessionQuietly(name);
    if (deleted > 0) this.emit();
    return deleted;
  }

  /** Bytes of every file under the root, records and streams included. */
  totalBytes(): number {
    return treeBytes(this.root);
  }

  /**
   * Deletes whole runs, oldest first across all sessions, until the store fits `budgetBytes`.
   * Runs still being written are never touched, so the result may stay over budget.
   */
  prune(budgetBytes: number): PruneResult {
    let total = this.totalBytes();
    let deletedRuns = 0;
    let freedBytes = 0;
    if (total > budgetBytes) {
      const runs = readDirNames(this.root)
        .filter((s) => SESSION_ID.test(s))
        .flatMap((sessionDigest) => this.runIds(sessionDigest).map((runId) => ({ sessionDigest, runId })))
        // Run ids start with their time, so one sort orders all sessions together.
        .sort((a, b) => compare(a.runId, b.runId) || compare(a.sessionDigest, b.sessionDigest));
      for (const { sessionDigest, runId } of runs) {
        if (total <= budgetBytes) break;
        if (this.active.has(`${sessionDigest}/${runId}`)) continue;
        const dir = this.runDir(sessionDigest, runId);
        const unfinished = !fs.existsSync(path.join(dir, RECORD_FILE));
        if (unfinished && this.now() - runTime(runId) < this.unfinishedGraceMs) continue;
        const bytes = treeBytes(dir);
        fs.rmSync(dir, { recursive: true, force: true });
        this.removeIfEmpty(this.sessionDir(sessionDigest));
        total -= bytes;
        freedBytes += bytes;
        deletedRuns++;
      }
    }
    if (deletedRuns > 0) this.emit();
    return { deletedRuns, freedBytes, totalBytes: total };
  }

  /** Called after runs are added or deleted, for a view to refresh. */
  onDidChange(listener: () => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private emit(): void {
    for (const listener of [...this.listeners]) {
      try {
        listener();
      } catch {
        // A failing view must not fail the run that changed the store.
      }
    }
  }

  private sessionDir(sessionDigest: string): string {
    if (!SESSION_ID.test(sessionDigest)) throw new Error(`not a session digest: ${JSON.stringify(sessionDigest)}`);
    return path.join(this.root, sessionDigest);
  }

  /** Run ids of a session, oldest first; entries that are not run folders are ignored. */
  private runIds(sessionDigest: string): string[] {
    return readDirNames(this.sessionDir(sessionDigest))
      .filter((n) => RUN_ID.test(n))
      .sort(compare);
  }

  private deleteSessionQuietly(sessionDigest: string): number {
    const sessionDir = this.sessionDir(sessionDigest);
    let deleted = 0;
    for (const runId of this.runIds(sessionDigest)) {
      if (this.active.has(`${sessionDigest}/${runId}`)) continue;
      fs.rmSync(path.join(sessionDir, runId), { recursive: true, force: true });
      deleted++;
    }
    this.removeIfEmpty(sessionDir);
    return deleted;
  }

  private removeIfEmpty(dir: string): void {
    try {
      fs.rmdirSync(dir);
    } catch {
      // not empty, or already gone
    }
  }
}

/**
 * Owns one run's folder while the run is collected. Files are streamed in, each exactly once,
 * and run.json is written last, so a listing never shows a half-collected run.
 */
export class RunWriter {
  readonly filesDir: string;
  private readonly stored: StoredFile[] = [];
  private done = false;

  constructor(
    readonly sessionDigest: string,
    readonly sessionLabel: string,
    readonly runId: string,
    /** The run's folder; pass it as the spill directory so whole streams land beside run.json. */
    readonly dir: string,
    private readonly release: (changed: boolean) => void,
  ) {
    this.filesDir = path.join(dir, FILES_DIR);
  }

  get files(): readonly StoredFile[] {
    return this.stored;
  }

  /**
   * Streams one produced file to disk. `expectedSize` is the size the caps were checked
   * against; a source that delivers more is cut off and one that delivers a different amount
   * is refused, since the file changed after it was checked. A refused or failed file leaves
   * nothing behind.
   */
  async addFile(name: string, source: Readable | Buffer, expectedSize: number): Promise<StoredFile> {
    if (this.done) throw new Error(`run ${this.runId} is already finished`);
    if (!Number.isSafeInteger(expectedSize) || expectedSize < 0) throw new Error(`invalid expected size: ${expectedSize}`);
    const verdict = classifyName(name);
    if (verdict.kind === 'traversal') {
      throw new ToolError('invalid_input', 'An output file name is not a plain relative path; that file was not saved.');
    }
    const normalized = verdict.normalized;
    const target = resolveInside(this.filesDir, normalized);
    const parent = path.dirname(target);
    try {
      fs.mkdirSync(parent, { recursive: true });
    } catch (e) {
      throw new ToolError('invalid_input', `${quote(normalized)} was not saved: a file of this run already uses part of its path as a name.`, { cause: e });
    }
    // The folders were created here, but check what they really are before writing into them.
    if (!isInside(fs.realpathSync(this.filesDir), fs.realpathSync(parent), true)) {
      throw new ToolError('invalid_input', `${quote(normalized)} was not saved: its folder is outside the run's folder.`);
    }

    let handle: fs.promises.FileHandle;
    try {
      // 'wx' fails if anything exists at the path, a symbolic link included: never overwrite.
      handle = await fs.promises.open(target, 'wx');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') {
        throw new ToolError('invalid_input', `${quote(normalized)} was already saved for this run; a stored file is never overwritten.`, { cause: e });
      }
      throw e;
    }

    let written = 0;
    let head = Buffer.alloc(0);
    const guard = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        written += chunk.length;
        if (written > expectedSize) return callback(new SizeMismatch());
        if (head.length < SNIFF_BYTES) head = Buffer.concat([head, chunk.subarray(0, SNIFF_BYTES - head.length)]);
        callback(null, chunk);
      },
    });
    try {
      await pipeline(Buffer.isBuffer(source) ? Readable.from([source]) : source, guard, handle.createWriteStream());
      if (written !== expectedSize) throw new SizeMismatch();
    } catch (e) {
      await handle.close().catch(() => undefined);
      fs.rmSync(target, { force: true });
      if (e instanceof SizeMismatch) {
        throw new ToolError(
          'invalid_input',
          `${quote(normalized)} was not saved: it changed while it was being collected (expected ${expectedSize} bytes).`,
          { cause: e },
        );
      }
      throw e;
    }
    const mediaType = sniffImageType(head);
    const file: StoredFile = { name: normalized, size: written, ...(mediaType ? { mediaType } : {}) };
    this.stored.push(file);
    return file;
  }

  /** Writes run.json (atomically: a reader sees the old state or the whole record) and releases the run. */
  finish(outcome: RunOutcome): RunRecord {
    if (this.done) throw new Error(`run ${this.runId} is already finished`);
    const record = RunRecord.parse({
      ...outcome,
      version: 1,
      runId: this.runId,
      sessionKeyDigest: this.sessionDigest,
      sessionLabel: this.sessionLabel,
      files: this.stored,
    });
    writeFileAtomic(path.join(this.dir, RECORD_FILE), `${JSON.stringify(record, null, 2)}\n`);
    this.done = true;
    this.release(true);
    return record;
  }

  /** Deletes the run's folder, for a run that should leave no trace (e.g. it never started). */
  discard(): void {
    if (this.done) return;
    this.done = true;
    fs.rmSync(this.dir, { recursive: true, force: true });
    this.release(false);
  }
}

class SizeMismatch extends Error {
  constructor() {
    super('source size differs from the expected size');
    this.name = 'SizeMismatch';
  }
}

/** `root/name`, refused if path resolution lands anywhere but strictly below `root`. */
function resolveInside(root: string, name: string): string {
  const verdict = classifyName(name);
  const target = verdict.kind === 'ok' ? path.resolve(root, ...verdict.normalized.split('/')) : undefined;
  // Defence in depth: classifyName already refuses every name that could resolve elsewhere.
  if (target === undefined || !isInside(path.resolve(root), target, false)) {
    throw new ToolError('invalid_input', 'An output file name is not a plain relative path; that file was not saved.');
  }
  return target;
}

function isInside(root: string, candidate: string, allowEqual: boolean): boolean {
  if (candidate === root) return allowEqual;
  return candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}

function writeFileAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const fd = fs.openSync(tmp, 'wx');
    try {
      fs.writeSync(fd, text);
      // Without this a crash after the rename can leave an empty record on some file systems.
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}

function runTime(runId: string): number {
  const m = RUN_ID.exec(runId)!;
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, +m[7]!);
}

function readDirNames(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/** Sum of file sizes below `dir`; symbolic links are counted as themselves, never followed. */
function treeBytes(dir: string): number {
  let total = 0;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += treeBytes(full);
    else {
      try {
        total += fs.lstatSync(full).size;
      } catch {
        // vanished meanwhile
      }
    }
  }
  return total;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
