import * as vscode from 'vscode';
import type { Notebook, Output } from '../storage/notebook';

/** The type VS Code's built-in ipynb extension gives .ipynb files (no Jupyter extension needed to view one). */
export const JUPYTER_NOTEBOOK = 'jupyter-notebook';

/**
 * An exported notebook (nbformat JSON) as VS Code's NotebookData, without outputs: cell
 * metadata is laid out as VS Code's ipynb extension lays out what it reads from a file (the
 * cell's id and nbformat metadata under `metadata`), so saving writes back the same notebook.
 * Outputs cannot travel with the content of an untitled notebook (VS Code drops their bytes on
 * the way to the editor), so `showRecordedOutputs` adds them afterwards.
 */
export function notebookData(nb: Notebook): vscode.NotebookData {
  const cells = nb.cells.map((cell) => {
    if (cell.cell_type === 'markdown') {
      const data = new vscode.NotebookCellData(vscode.NotebookCellKind.Markup, cell.source, 'markdown');
      data.metadata = { id: cell.id, metadata: cell.metadata };
      return data;
    }
    const data = new vscode.NotebookCellData(vscode.NotebookCellKind.Code, cell.source, 'python');
    data.metadata = { id: cell.id, metadata: cell.metadata };
    return data;
  });
  const data = new vscode.NotebookData(cells);
  data.metadata = { metadata: nb.metadata, nbformat: nb.nbformat, nbformat_minor: nb.nbformat_minor };
  return data;
}

/**
 * Puts each run's recorded outputs into the open notebook the way kernels do: through a cell
 * execution of a controller made for this and disposed right after, so it never lingers in the
 * kernel picker. The notebook then has no kernel; the user picks a Python one to run it again.
 */
export async function showRecordedOutputs(editor: vscode.NotebookEditor, nb: Notebook, extensionId: string): Promise<void> {
  const id = `codeact-sandbox-recorded-${Date.now().toString(36)}`;
  const controller = vscode.notebooks.createNotebookController(id, JUPYTER_NOTEBOOK, 'CodeAct Sandbox: recorded runs');
  controller.supportedLanguages = ['python'];
  try {
    await vscode.commands.executeCommand('notebook.selectKernel', { notebookEditor: editor, id, extension: extensionId });
    const cells = editor.notebook.getCells();
    for (const [i, cell] of nb.cells.entries()) {
      if (cell.cell_type !== 'code') continue;
      const target = cells[i];
      if (!target) continue;
      const execution = controller.createNotebookCellExecution(target);
      if (cell.execution_count !== null) execution.executionOrder = cell.execution_count;
      execution.start();
      await execution.replaceOutput(cell.outputs.map(cellOutput));
      execution.end(!cell.outputs.some((o) => o.output_type === 'error'));
    }
  } finally {
    controller.dispose();
  }
}

function cellOutput(o: Output): vscode.NotebookCellOutput {
  if (o.output_type === 'stream') {
    const item = o.name === 'stdout' ? vscode.NotebookCellOutputItem.stdout(o.text) : vscode.NotebookCellOutputItem.stderr(o.text);
    return new vscode.NotebookCellOutput([item], { outputType: 'stream' });
  }
  if (o.output_type === 'error') {
    return new vscode.NotebookCellOutput([vscode.NotebookCellOutputItem.error({ name: o.ename, message: o.evalue })], { outputType: 'error' });
  }
  // Richest first: VS Code shows the first item it can render.
  const items = Object.entries(o.data)
    .sort(([a], [b]) => rank(a) - rank(b))
    .map(([mime, value]) =>
      mime === 'image/png' || mime === 'image/jpeg' || mime === 'image/gif'
        ? new vscode.NotebookCellOutputItem(Buffer.from(value, 'base64'), mime)
        : vscode.NotebookCellOutputItem.text(value, mime),
    );
  return new vscode.NotebookCellOutput(items, { outputType: 'display_data', metadata: o.metadata });
}

function rank(mime: string): number {
  return mime.startsWith('image/') ? 0 : mime === 'text/plain' ? 2 : 1;
}
