import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ToolError } from '../core/errors';
import { SNIFF_BYTES, sniffImageType } from '../core/files/magic';
import { classifyName, quote } from '../core/files/names';
import type { StateSeal } from './stateSeal';
import { RunRecord, type RunOutcome, type StoredFile } from './runRecord';

export const RECORD_FILE = 'run.json';
export const FILES_DIR = 'files';
export const STREAM_FILES = { stdout: 'stdout.txt', stderr: 'stderr.txt' } as const;

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
    /** Called once: with the record when the run finished, without one when it was discarded. */
    private readonly release: (record: RunRecord | undefined) => void,
    /** Seals a session run's record, whose program a resume may replay. */
    private readonly stateSeal?: StateSeal,
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
      await fs.promises.mkdir(parent, { recursive: true });
    } catch (e) {
      throw new ToolError('invalid_input', `${quote(normalized)} was not saved: a file of this run already uses part of its path as a name.`, { cause: e });
    }
    // The folders were created here, but check what they really are before writing into them.
    if (!isInside(await fs.promises.realpath(this.filesDir), await fs.promises.realpath(parent), true)) {
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
      await fs.promises.rm(target, { force: true });
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

  /**
   * Writes run.json (atomically: a reader sees the old state or the whole record) and releases
   * the run. Synchronous because the pipeline records a run as it returns its result; it writes
   * one small file and reads nothing.
   */
  finish(outcome: RunOutcome): RunRecord {
    if (this.done) throw new Error(`run ${this.runId} is already finished`);
    let record = RunRecord.parse({
      ...outcome,
      version: 1,
      runId: this.runId,
      sessionKeyDigest: this.sessionDigest,
      sessionLabel: this.sessionLabel,
      files: this.stored,
    });
    if (record.state && this.stateSeal) {
      // Unsealed, the record is kept and shown as any other; a resume refuses it, and says so.
      try {
        record = { ...record, stateSeal: this.stateSeal.seal(record) };
      } catch {
        // (the store's key is unusable: see stateSeal.ts)
      }
    }
    // Not flushed to the disk: the record is written on the way to the call's result, where a flush
    // took 0.3 ms at the median and up to 17 ms (40 writes on an idle ext4 disk of a 2-vCPU
    // virtual machine), more on a busy one. The run's files are not flushed either, so a flushed
    // record would not make the run durable; a record a crash leaves empty reads as unreadable
    // (parseRecord), as any damaged one does.
    writeFileAtomic(path.join(this.dir, RECORD_FILE), `${JSON.stringify(record, null, 2)}\n`, { durable: false });
    this.done = true;
    this.release(record);
    return record;
  }

  /** Deletes the run's folder, for a run that should leave no trace (e.g. it never started). */
  discard(): void {
    if (this.done) return;
    this.done = true;
    fs.rmSync(this.dir, { recursive: true, force: true });
    this.release(undefined);
  }
}

class SizeMismatch extends Error {
  constructor() {
    super('source size differs from the expected size');
    this.name = 'SizeMismatch';
  }
}

/** `root/name`, refused if path resolution lands anywhere but strictly below `root`. */
export function resolveInside(root: string, name: string): string {
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

/**
 * Writes `file` whole or not at all: a reader sees the old content or the new, never a part.
 * `durable` (the default) also flushes it to the disk before the rename, so that a crash just after
 * cannot leave an empty file on some file systems: for a file the user asked for and may be
 * replacing (an exported notebook).
 */
export function writeFileAtomic(file: string, text: string, { durable = true }: { durable?: boolean } = {}): void {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const fd = fs.openSync(tmp, 'wx');
    try {
      fs.writeSync(fd, text);
      if (durable) fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}
