import * as fs from 'node:fs';
import type { ArtifactStore } from '../artifactStore';
import type { RunRecord } from '../runRecord';
import { buildNotebook, INLINE_IMAGE_MAX_BYTES, type FileContent, type NotebookOptions } from './build';
import type { Notebook } from './nbformat';

/** A chat with nothing to export: the caller says so in a sentence rather than open an empty notebook. */
export class NoRunsError extends Error {
  constructor(readonly sessionLabel: string | undefined) {
    super(`${sessionLabel ?? 'This chat'} has no runs to put in a notebook.`);
    this.name = 'NoRunsError';
  }
}

export interface SessionNotebookOptions extends NotebookOptions {
  /** The chat up to and including this run (a run's "Open as Notebook"). */
  upToRunId?: string;
  now?: Date;
}

/** A session's runs, oldest first: all of them, or up to and including `upToRunId` (none when it is not there). */
export async function sessionRuns(store: ArtifactStore, sessionDigest: string, upToRunId?: string): Promise<RunRecord[]> {
  const runs = (await store.listRuns(sessionDigest)).reverse();
  if (upToRunId === undefined) return runs;
  return runs.slice(0, runs.findIndex((r) => r.runId === upToRunId) + 1);
}

/** One session's runs in the store, oldest first, as a notebook; stored images read back for inline display. */
export async function sessionNotebook(store: ArtifactStore, sessionDigest: string, options: SessionNotebookOptions = {}): Promise<{ notebook: Notebook; runs: RunRecord[] }> {
  const runs = await sessionRuns(store, sessionDigest, options.upToRunId);
  const label = runs[runs.length - 1]?.sessionLabel;
  if (runs.length === 0) throw new NoRunsError(label);
  const file = (run: RunRecord, f: { name: string; size: number }): FileContent => readInline(store.filePath(sessionDigest, run.runId, f.name));
  const notebook = buildNotebook({ sessionLabel: label ?? 'Chat', runs, file, now: options.now ?? new Date() }, options);
  if (notebook.cells.length === 1) throw new NoRunsError(label);
  return { notebook, runs };
}

/**
 * A stored file's bytes for showing inline: only a regular file, not followed through a link,
 * and its size checked before it is read. The store writes nothing else, but it is a folder on
 * disk (and --artifacts names any folder): a record is not trusted to point at a plain file.
 */
function readInline(file: string): FileContent {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch {
    return { gone: true };
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) return { gone: true };
    if (stat.size > INLINE_IMAGE_MAX_BYTES) return { tooLarge: true };
    const bytes = Buffer.alloc(stat.size);
    let read = 0;
    while (read < bytes.length) {
      const n = fs.readSync(fd, bytes, read, bytes.length - read, read);
      if (n === 0) break;
      read += n;
    }
    return { bytes: bytes.subarray(0, read) };
  } finally {
    fs.closeSync(fd);
  }
}

/** The notebook as an .ipynb file's text (Jupyter writes one-space indents and a final newline). */
export function notebookText(notebook: Notebook): string {
  return `${JSON.stringify(notebook, null, 1)}\n`;
}
