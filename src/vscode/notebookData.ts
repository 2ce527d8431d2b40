import * as vscode from 'vscode';
import type { Notebook, Output } from '../storage/notebook';

/**
 * An exported notebook (nbformat JSON) as VS Code's NotebookData, for an untitled notebook of
 * the built-in `jupyter-notebook` type. Metadata is laid out as VS Code's ipynb extension lays
 * out what it reads from a file (the cell's id, execution count and nbformat metadata under
 * `metadata`), so that saving the untitled notebook writes back the same notebook.
 */
export function notebookData(nb: Notebook): vscode.NotebookData {
  const cells = nb.cells.map((cell) => {
    if (cell.cell_type === 'markdown') {
      const data = new vscode.NotebookCellData(vscode.NotebookCellKind.Markup, cell.source, 'markdown');
      data.metadata = { id: cell.id, metadata: cell.metadata };
      return data;
    }
    const data = new vscode.NotebookCellData(vscode.NotebookCellKind.Code, cell.source, 'python');
    data.metadata = { id: cell.id, execution_count: cell.execution_count, metadata: cell.metadata };
    data.outputs = cell.outputs.map(cellOutput);
    const failed = cell.outputs.some((o) => o.output_type === 'error');
    if (cell.execution_count !== null) data.executionSummary = { executionOrder: cell.execution_count, success: !failed };
    return data;
  });
  const data = new vscode.NotebookData(cells);
  data.metadata = { metadata: nb.metadata, nbformat: nb.nbformat, nbformat_minor: nb.nbformat_minor };
  return data;
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
