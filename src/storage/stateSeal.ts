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

export class StateSeal {
  private key: Buffer | undefined;

  constructor(private readonly root: string) {}

  /** The seal of what a replay runs: the chat, the run, its program, directory, files and state links. */
  seal(record: Omit<RunRecord, 'stateSeal'>): string {
    return createHmac('sha256', this.secret()).update(sealed(record)).digest('hex');
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

  /** Read, or made on first use (`create`); two processes making it at once agree on the first. */
  private secret(create = true): Buffer {
    if (this.key) return this.key;
    const file = path.join(this.root, KEY_FILE);
    for (;;) {
      try {
        const key = fs.readFileSync(file);
        if (key.length !== KEY_BYTES) throw new Error(`${file} is not a key of this store`);
        return (this.key = key);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || !create) throw e;
      }
      fs.mkdirSync(this.root, { recursive: true });
      try {
        // Written whole before it is linked in under its name: a reader never sees half a key.
        const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
        fs.writeFileSync(tmp, randomBytes(KEY_BYTES), { mode: 0o600, flag: 'wx' });
        try {
          fs.linkSync(tmp, file);
        } finally {
          fs.rmSync(tmp, { force: true });
        }
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
    }
  }
}

function sealed(record: Omit<RunRecord, 'stateSeal'>): string {
  return JSON.stringify([record.sessionKeyDigest, record.runId, record.program, record.workDir ?? null, record.filesIn, record.state ?? null]);
}
