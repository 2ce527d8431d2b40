import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { WorkspaceSource } from '../core/files/filesIn';
import { bytesReader } from '../core/sandbox';
import { openInside } from '../storage/workspaceFolder';

/** A listing this large is not a data folder; the cap keeps a huge monorepo from stalling a call. */
const MAX_LISTED = 50_000;

/**
 * The open workspace as the file store. The listing comes from `workspace.findFiles`, which
 * honours `files.exclude`; with several folders, names are qualified by the folder's name.
 * Local folders are read from disk (links must stay inside the folder); a remote workspace
 * (the extension runs next to the user's Docker engine while VS Code is attached elsewhere) is
 * read through `workspace.fs`, where links are not followed at all.
 */
export function workspaceSource(): WorkspaceSource | undefined {
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (folders.length === 0) return undefined;
  const multi = folders.length > 1;
  const nameOf = (uri: vscode.Uri): string | undefined => {
    const folder = vscode.workspace.getWorkspaceFolder(uri);
    if (!folder) return undefined;
    const rel = vscode.workspace.asRelativePath(uri, false).replace(/\\/g, '/');
    return multi ? `${folder.name}/${rel}` : rel;
  };
  return {
    // A remote folder's path is the one its machine (and the model, in the editor) shows.
    roots: folders.map((f) => ({ path: f.uri.scheme === 'file' ? f.uri.fsPath : f.uri.path, prefix: multi ? `${f.name}/` : '' })),
    async list() {
      const uris = await vscode.workspace.findFiles('**/*', undefined, MAX_LISTED);
      return uris.map(nameOf).filter((n): n is string => n !== undefined);
    },
    async open(name) {
      let folder = folders[0]!;
      let rel = name;
      if (multi) {
        const [head, ...rest] = name.split('/');
        const match = folders.find((f) => f.name === head);
        if (!match) return { refused: 'is not in any workspace folder.' };
        folder = match;
        rel = rest.join('/');
      }
      const uri = vscode.Uri.joinPath(folder.uri, ...rel.split('/'));
      if (folder.uri.scheme === 'file') return openInside(fs.realpathSync(folder.uri.fsPath), uri.fsPath);
      const stat = await vscode.workspace.fs.stat(uri);
      if (stat.type & vscode.FileType.SymbolicLink) return { refused: 'is a link, and links are not followed in a remote workspace.' };
      if (!(stat.type & vscode.FileType.File)) return { refused: 'is not a regular file and cannot be shared.' };
      // workspace.fs has no streaming read: the file is held once, then read into the archive.
      return { size: stat.size, open: async () => bytesReader(await vscode.workspace.fs.readFile(uri)) };
    },
  };
}
