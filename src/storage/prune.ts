import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Keeps the `keep` most recent run folders under root/<session>/<run> and deletes the rest, so
 * kept full outputs cannot grow without bound. Folder names start with an ISO timestamp.
 */
export function pruneRunFolders(root: string, keep: number): number {
  let sessions: string[];
  try {
    sessions = fs.readdirSync(root);
  } catch {
    return 0;
  }
  const runs: { dir: string; mtime: number }[] = [];
  for (const s of sessions) {
    const sessionDir = path.join(root, s);
    let entries: string[] = [];
    try {
      entries = fs.readdirSync(sessionDir);
    } catch {
      continue;
    }
    for (const r of entries) {
      const dir = path.join(sessionDir, r);
      try {
        runs.push({ dir, mtime: fs.statSync(dir).mtimeMs });
      } catch {
        // vanished meanwhile
      }
    }
  }
  runs.sort((a, b) => b.mtime - a.mtime);
  const doomed = runs.slice(keep);
  for (const r of doomed) fs.rmSync(r.dir, { recursive: true, force: true });
  for (const s of sessions) {
    const sessionDir = path.join(root, s);
    try {
      if (fs.readdirSync(sessionDir).length === 0) fs.rmdirSync(sessionDir);
    } catch {
      // not a folder or not empty
    }
  }
  return doomed.length;
}
