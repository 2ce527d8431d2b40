import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RunRecord } from './runRecord';

/**
 * A session run's record is a program the next sandbox may run again (resume), so the store seals
 * what a replay takes from it: an HMAC under a key of this store's own, kept beside the runs
 * (readable by this user alone). A record edited on disk, or copied from another chat or another
 * store, fails the check and is refused rather than replayed.
 */
const KEY_FILE = '.state-key';
const KEY_BYTES = 32;
/** 80 bits: a tag is checked by this store alone, one guess per call. */
const TAG_CHARS = 20;

export class StateSeal {
  private key: Buffer | undefined;

  constructor(private readonly root: string) {}

  /** The seal of what a replay runs: the chat, the run, its program, directory, files and state links. */
  seal(record: Omit<RunRecord, 'stateSeal'>): string {
    return createHmac('sha256', this.secret()).update(sealed(record)).digest('hex');
  }

  /**
   * A short tag over `parts` for `purpose`, under the same key: what this store hands out (a run
   * the person chose to start a new chat from) and alone can recognise when it comes back.
   */
  tag(purpose: string, parts: readonly string[]): string {
    return tagWith(this.secret(), purpose, parts);
  }

  /** Whether `tag` is this store's tag over `parts` for `purpose`. */
  checkTag(purpose: string, parts: readonly string[], tag: string): boolean {
    if (!new RegExp(`^[0-9a-f]{${TAG_CHARS}}$`).test(tag)) return false;
    let want: string;
    try {
      want = tagWith(this.secret(false), purpose, parts);
    } catch {
      return false;
    }
    return timingSafeEqual(Buffer.from(want), Buffer.from(tag));
  }

  check(record: RunRecord): boolean {
    if (!record.stateSeal || !/^[0-9a-f]{64}$/.test(record.stateSeal)) return false;
    let key: Buffer;
    try {
      key = this.secret(false);
    } catch {
      return false;
    }
    const want = createHmac('sha256', key).update(sealed(record)).digest();
    return timingSafeEqual(want, Buffer.from(record.stateSeal, 'hex'));
  }

  /**
   * Read, or made on first use (`create`); two processes making it at once agree on the first. Only
   * a regular file of the key's size is a key: a link, a FIFO or anything else there is refused
   * (not followed, not waited on), and a few tries are all a race gets.
   */
  private secret(create = true): Buffer {
    if (this.key) return this.key;
    const file = path.join(this.root, KEY_FILE);
    for (let attempt = 0; attempt < 3; attempt++) {
      const key = readKey(file);
      if (key) return (this.key = key);
      if (!create) break;
      fs.mkdirSync(this.root, { recursive: true });
      // Written whole before it is linked in under its name: a reader never sees half a key.
      const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
      fs.writeFileSync(tmp, randomBytes(KEY_BYTES), { mode: 0o600, flag: 'wx' });
      try {
        fs.linkSync(tmp, file);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      } finally {
        fs.rmSync(tmp, { force: true });
      }
    }
    throw new Error(`${file} is not a key of this store`);
  }
}

/** The key at `file`; undefined when there is nothing there. Anything but a regular file of its size throws. */
function readKey(file: string): Buffer | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile() || stat.size !== KEY_BYTES) throw new Error(`${file} is not a key of this store`);
    const key = Buffer.alloc(KEY_BYTES);
    if (fs.readSync(fd, key, 0, KEY_BYTES, 0) !== KEY_BYTES) throw new Error(`${file} is not a key of this store`);
    return key;
  } finally {
    fs.closeSync(fd);
  }
}

function tagWith(key: Buffer, purpose: string, parts: readonly string[]): string {
  return createHmac('sha256', key).update(JSON.stringify([purpose, ...parts])).digest('hex').slice(0, TAG_CHARS);
}

function sealed(record: Omit<RunRecord, 'stateSeal'>): string {
  return JSON.stringify([record.sessionKeyDigest, record.runId, record.program, record.workDir ?? null, record.filesIn, record.state ?? null]);
}
