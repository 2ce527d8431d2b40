import { pack } from 'tar-stream';
import type { Readable } from 'node:stream';
import { SANDBOX_GID, SANDBOX_UID } from '../container';

export type ArchiveEntry =
  | { type: 'directory'; name: string; mode?: number }
  | { type: 'file'; name: string; content: Buffer; mode?: number };

/**
 * A tar stream of entries owned by the sandbox user. Built with tar-stream rather than by hand:
 * long names, PAX headers and padding are its job.
 */
export function archiveOf(entries: ArchiveEntry[]): Readable {
  const p = pack();
  const mtime = new Date();
  for (const e of entries) {
    const common = { name: e.name, uid: SANDBOX_UID, gid: SANDBOX_GID, mtime, uname: 'nobody', gname: 'nogroup' };
    if (e.type === 'directory') p.entry({ ...common, type: 'directory', mode: e.mode ?? 0o700 });
    else p.entry({ ...common, type: 'file', mode: e.mode ?? 0o600, size: e.content.length }, e.content);
  }
  p.finalize();
  return p as unknown as Readable;
}
