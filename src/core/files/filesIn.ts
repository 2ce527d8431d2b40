import { ToolError } from '../errors';
import type { SharedContent, StagedFile } from '../sandbox';
import { quote, resolveFilesIn, type FilesInOptions } from './names';
import { toWorkspaceName, type WorkspaceRoot } from './workspacePath';

/**
 * The workspace as the file store. `list` is the authority on which names exist; `open` is asked
 * only for names the listing holds and returns the file's size and a way to read it, or says
 * why it cannot be shared (e.g. a link that leads outside the workspace).
 */
export interface WorkspaceSource {
  /** Workspace-relative, '/'-separated names; qualified by folder in a multi-root workspace. */
  list(): Promise<string[]>;
  open(name: string): Promise<SharedContent | { refused: string }>;
  /** The folders on disk, where known: a path the model gives inside one is read as its workspace name (workspacePath.ts). */
  roots?: readonly WorkspaceRoot[];
}

/**
 * The files to place in the call's directory. Names are checked against the listing (and the
 * deny-list, and the count cap) before anything is looked at; sizes are then read from the file
 * system's metadata and checked against the byte caps before anything is read.
 */
export async function selectFilesIn(
  requested: readonly string[],
  source: WorkspaceSource,
  opts: Omit<FilesInOptions, 'programBytes'> & { programBytes: number },
): Promise<StagedFile[]> {
  if (requested.length === 0) return [];
  requested = requested.map((name) => toWorkspaceName(name, source.roots ?? []));
  const names = await source.list();
  // Pass 1, names only: sizes are unknown yet and must not trip the byte caps.
  const matched = resolveFilesIn(
    requested,
    names.map((name) => ({ name, size: 0 })),
    { ...opts, maxFileBytes: Number.MAX_SAFE_INTEGER, maxTotalBytes: Number.MAX_SAFE_INTEGER },
  );
  const opened = new Map<string, SharedContent>();
  const refusals: string[] = [];
  for (const file of matched) {
    const r = await source.open(file.name);
    if ('refused' in r) refusals.push(`${quote(file.name)} ${r.refused}`);
    else opened.set(file.name, r);
  }
  if (refusals.length > 0) {
    throw new ToolError('invalid_input', [...refusals, 'No files were shared; correct the list of files and call again.'].join('\n'));
  }
  // Pass 2, with real sizes: every byte cap, before a single byte is read.
  const sized = resolveFilesIn(
    matched.map((f) => f.name),
    matched.map((f) => ({ name: f.name, size: opened.get(f.name)!.size })),
    opts,
  );
  return sized.map((f) => ({ name: f.name, size: f.size, open: opened.get(f.name)!.open }));
}
