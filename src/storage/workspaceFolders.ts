import type { WorkspaceSource } from '../core/files/filesIn';
import { folderSource } from './workspaceFolder';

export interface NamedFolder {
  /** How names of its files start when there are several folders; unique among them. */
  name: string;
  path: string;
}

/**
 * Folders on disk as one file store, named as in a VS Code multi-root workspace, so a model sees
 * the same names whichever host serves it: with one folder, its files by their relative names;
 * with several, qualified by the folder's name ("data/sales.csv" becomes "project/data/sales.csv").
 * Undefined when there is no folder.
 */
export function foldersSource(folders: readonly NamedFolder[]): WorkspaceSource | undefined {
  if (folders.length === 0) return undefined;
  if (folders.length === 1) return folderSource(folders[0]!.path);
  const sources = new Map(folders.map((f) => [f.name, folderSource(f.path)]));
  return {
    roots: [...sources].flatMap(([name, source]) => (source.roots ?? []).map((r) => ({ path: r.path, prefix: `${name}/` }))),
    async list() {
      const names: string[] = [];
      for (const [folder, source] of sources) for (const name of await source.list()) names.push(`${folder}/${name}`);
      return names;
    },
    async open(name) {
      const [head, ...rest] = name.split('/');
      const source = sources.get(head!);
      if (!source || rest.length === 0) return { refused: 'is not in any workspace folder.' };
      return source.open(rest.join('/'));
    },
  };
}
