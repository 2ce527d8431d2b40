import * as path from 'node:path';
import * as vscode from 'vscode';
import { describeError } from '../core/errors';
import type { ArtifactStore } from '../storage/artifactStore';
import { NoRunsError, leftOutWhenKeptOnly, notebookText, sessionNotebook, sessionRuns, type SessionNotebookOptions } from '../storage/notebook';
import type { ArtifactNode } from './artifactItems';
import type { CommandTable } from './commands';
import { COMMAND } from './ids';
import type { Logger } from '../core/logger';
import { JUPYTER_NOTEBOOK, notebookData, showRecordedOutputs } from './notebookData';
import { ACTION, type Ui } from './ui';

/** What the export command may be handed instead of asking (the extension's own tests; a keybinding). */
export interface ExportOptions {
  target?: string;
  keptStateOnly?: boolean;
}

/** The chat of a session node; the chat up to a run of a run node. */
function scope(node: ArtifactNode | undefined): { sessionDigest: string; options: SessionNotebookOptions } | undefined {
  if (node?.kind === 'session') return { sessionDigest: node.session.sessionDigest, options: {} };
  if (node?.kind === 'run') return { sessionDigest: node.sessionDigest, options: { upToRunId: node.record.runId } };
  return undefined;
}

/** "Open as Notebook" and "Export Notebook…" on a chat or a run of the CodeAct Sandbox view. */
export function notebookCommands(store: ArtifactStore, ui: Ui, log: Logger, extensionId: string): CommandTable<typeof COMMAND.openNotebook | typeof COMMAND.exportNotebook> {
  const build = async (node: ArtifactNode | undefined, extra: SessionNotebookOptions = {}) => {
    const s = scope(node);
    if (!s) return undefined;
    try {
      return await sessionNotebook(store, s.sessionDigest, { ...s.options, ...extra });
    } catch (e) {
      if (e instanceof NoRunsError) {
        ui.showInfo(`CodeAct Sandbox: ${e.message}`);
        return undefined;
      }
      log.error(`could not make the notebook: ${describeError(e)}`);
      ui.showError(`CodeAct Sandbox: the notebook could not be made: ${describeError(e)}`, ACTION.showLog);
      return undefined;
    }
  };

  return {
    [COMMAND.openNotebook]: async (node?: ArtifactNode) => {
      const made = await build(node);
      if (!made) return undefined;
      const doc = await vscode.workspace.openNotebookDocument(JUPYTER_NOTEBOOK, notebookData(made.notebook));
      const editor = await vscode.window.showNotebookDocument(doc, { preview: false });
      await showRecordedOutputs(editor, made.notebook, extensionId);
      return doc.uri.toString();
    },
    [COMMAND.exportNotebook]: async (node?: ArtifactNode, given: ExportOptions = {}) => {
      const s = scope(node);
      if (!s) return undefined;
      let keptStateOnly = given.keptStateOnly;
      if (keptStateOnly === undefined) {
        // The runs this export covers: the chat, or the chat up to the run it was asked on.
        const unkept = leftOutWhenKeptOnly(await sessionRuns(store, s.sessionDigest, s.options.upToRunId));
        if (unkept > 0) {
          const all = 'All runs';
          const kept = `Only the runs whose state was kept (leaves out ${unkept})`;
          const choice = await vscode.window.showQuickPick([all, kept], {
            title: 'Export Notebook',
            placeHolder: 'Runs whose state was not kept would change the state when the notebook is run top to bottom',
          });
          if (!choice) return undefined;
          keptStateOnly = choice === kept;
        }
      }
      const made = await build(node, keptStateOnly ? { keptStateOnly } : {});
      if (!made) return undefined;
      let target = given.target === undefined ? undefined : vscode.Uri.file(given.target);
      if (!target) {
        const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
        const name = `${safeName(made.runs[made.runs.length - 1]?.sessionLabel ?? 'chat')}.ipynb`;
        target = await vscode.window.showSaveDialog({
          title: 'Export Notebook',
          filters: { 'Jupyter Notebook': ['ipynb'] },
          ...(folder ? { defaultUri: vscode.Uri.joinPath(folder, name) } : {}),
        });
      }
      // Only the user's own choice of a place writes anything outside the extension's storage.
      if (!target) return undefined;
      await vscode.workspace.fs.writeFile(target, Buffer.from(notebookText(made.notebook), 'utf8'));
      ui.showInfo(`CodeAct Sandbox: exported ${made.notebook.cells.length - 1} run(s) to ${path.basename(target.fsPath)}.`);
      return target.fsPath;
    },
  };
}

/** A file name from a session label: letters, digits, dashes and dots. */
export function safeName(label: string): string {
  return label.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[-.]+|-+$/g, '') || 'chat';
}
