import * as path from 'node:path';
import { RUN_ID, SESSION_ID, type StoreFs } from '../storeIndex';

/**
 * Where runs are on disk, and their folders' removal:
 *
 *     root/<sessionDigest>/<runId>/run.json
 *     root/<sessionDigest>/<runId>/files/<name>
 *     root/<sessionDigest>/<runId>/stdout.txt, stderr.txt   (whole streams, when cut for the model)
 *     root/<sessionDigest>/<runId>/origin/                  (copies of another chat's records: chatOrigins.ts)
 *
 * Only the store's own ids become path segments; anything else is a bug, thrown as one.
 */
export class RunFolders {
  constructor(
    readonly root: string,
    private readonly fsp: StoreFs,
  ) {}

  sessionDir(sessionDigest: string): string {
    if (!SESSION_ID.test(sessionDigest)) throw new Error(`not a session digest: ${JSON.stringify(sessionDigest)}`);
    return path.join(this.root, sessionDigest);
  }

  runDir(sessionDigest: string, runId: string): string {
    if (!RUN_ID.test(runId)) throw new Error(`not a run id: ${JSON.stringify(runId)}`);
    return path.join(this.sessionDir(sessionDigest), runId);
  }

  async exists(file: string): Promise<boolean> {
    try {
      await this.fsp.lstat(file);
      return true;
    } catch {
      return false;
    }
  }

  /** The entries of a folder; none when it cannot be read. */
  async names(dir: string): Promise<string[]> {
    try {
      return (await this.fsp.readdir(dir, { withFileTypes: true })).map((e) => e.name);
    } catch {
      return [];
    }
  }

  /** Deletes a run's folder; true when it was already gone (another window deleted it first). */
  async removeRun(sessionDigest: string, runId: string): Promise<boolean> {
    const dir = this.runDir(sessionDigest, runId);
    const gone = !(await this.exists(dir));
    if (!gone) await this.fsp.rm(dir, { recursive: true, force: true });
    return gone;
  }

  /** A session's folder goes with its last run. */
  async removeSessionIfEmpty(sessionDigest: string): Promise<void> {
    try {
      await this.fsp.rmdir(this.sessionDir(sessionDigest));
    } catch {
      // not empty, or already gone
    }
  }
}
