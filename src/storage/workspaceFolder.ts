import * as fs from 'node:fs';
import * as path from 'node:path';
import type { WorkspaceSource } from '../core/files/filesIn';
import { SharedFileChangedError, type SharedContent, type StagedReader } from '../core/sandbox';

/** A listing never walks forever: a workspace this large is not a data folder. */
const MAX_LISTED = 50_000;
/** Folders no one means to share, skipped to keep the walk short (the deny-list still applies). */
const SKIPPED_DIRS = new Set(['.git', 'node_modules', '.venv', '__pycache__']);

/**
 * A folder on disk as the file store (the CLI's --workspace): the listing is its regular files
 * (symbolic links to files are listed, but only shared when they lead to a file inside the
 * folder).
 */
export function folderSource(root: string): WorkspaceSource {
  const realRoot = fs.realpathSync(root);
  const given = path.resolve(root);
  return {
    // The folder as given and as it really is (a link in its path): a model may name either.
    roots: [...new Set([given, realRoot])].map((p) => ({ path: p, prefix: '' })),
    async list() {
      const names: string[] = [];
      const walk = (dir: string, prefix: string) => {
        for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
          if (names.length >= MAX_LISTED) return;
          const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
          if (entry.isDirectory()) {
            if (!SKIPPED_DIRS.has(entry.name)) walk(path.join(dir, entry.name), rel);
          } else if (entry.isFile() || entry.isSymbolicLink()) {
            names.push(rel);
          }
        }
      };
      walk(realRoot, '');
      return names;
    },
    async open(name) {
      return openInside(realRoot, path.join(realRoot, ...name.split('/')));
    },
  };
}

/** Stat a listed file for sharing: a regular file whose real path stays inside `realRoot`. */
export async function openInside(
  realRoot: string,
  file: string,
): Promise<SharedContent | { refused: string }> {
  let real: string;
  try {
    real = await fs.promises.realpath(file);
  } catch {
    return { refused: 'no longer exists.' };
  }
  const rel = path.relative(realRoot, real);
  if (rel.startsWith('..') || path.isAbsolute(rel)) {
    return { refused: 'is a link to a file outside the workspace and cannot be shared.' };
  }
  // The resolved path itself, not what it may lead to by now: the open checks the file again.
  const stat = await fs.promises.lstat(real, { bigint: true });
  if (!stat.isFile()) return { refused: 'is not a regular file and cannot be shared.' };
  return { size: Number(stat.size), open: () => openChecked(real, stat) };
}

// No link followed at the last step (the path is already resolved), and no wait on a FIFO put in
// the file's place: the open returns at once and the check below refuses it.
const OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);

/**
 * Opens the file that was checked, and only that one: between the check and the send (a call can
 * wait behind another) the name, or a folder on its way, may come to mean a link, a FIFO or
 * another file. What was opened must be the file checked, and its path must still lead to it
 * through no link: a folder swapped for a link only while the open ran leaves the path leading
 * elsewhere afterwards, or to a file that is not the one opened. Inode numbers as bigints: on
 * Windows they do not fit a double.
 */
export async function openChecked(real: string, checked: fs.BigIntStats): Promise<StagedReader> {
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(real, OPEN_FLAGS);
  } catch (e) {
    throw new SharedFileChangedError('replaced', { cause: e });
  }
  try {
    const [opened, again, named] = await Promise.all([handle.stat({ bigint: true }), fs.promises.realpath(real), fs.promises.lstat(real, { bigint: true })]);
    const same = (a: fs.BigIntStats, b: fs.BigIntStats) => a.ino === b.ino && a.dev === b.dev;
    if (!opened.isFile() || !same(opened, checked) || again !== real || !same(named, opened)) throw new SharedFileChangedError('replaced');
  } catch (e) {
    await handle.close();
    throw e instanceof SharedFileChangedError ? e : new SharedFileChangedError('replaced', { cause: e });
  }
  return {
    read: async (into, position) => (await handle.read(into, 0, into.length, position)).bytesRead,
    close: () => handle.close(),
  };
}
