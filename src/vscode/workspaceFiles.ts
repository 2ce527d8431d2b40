import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { WorkspaceSource } from '../core/files/filesIn';
import { openInside } from '../storage/workspaceFolder';

/** A listing this large is not a data folder; the cap keeps a huge monorepo from stalling a call. */
const MAX_LISTED = 50_000;

/**
 * The open workspace as the file store. The listing comes from `workspace.findFiles`, which
 * honours `files.exclude`; with several folders, names are qualified by the folder's name.
 */
export function workspaceSource(): WorkspaceSource | undefined {
  const folders = vscode.workspace.workspaceFolders?.filter((f) => f.uri.scheme === 'file') ?? [];
  if (folders.length === 0) return undefined;
  const multi = folders.length > 1;
  const nameOf = (uri: vscode.Uri): string | undefined => {
    const folder = vscode.workspace.getWorkspaceFolder(uri);
    if (!folder || !folders.includes(folder)) return undefined;
    const rel = vscode.workspace.asRelativePath(uri, false).replace(/\\/g, '/');
    return multi ? `${folder.name}/${rel}` : rel;
  };
  return {
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
      const root = fs.realpathSync(folder.uri.fsPath);
      return openInside(root, vscode.Uri.joinPath(folder.uri, ...rel.split('/')).fsPath);
    },
  };
}
