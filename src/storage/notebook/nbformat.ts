/** The part of nbformat 4.5 (https://github.com/jupyter/nbformat, v4 schema) that exported notebooks use. */

export type Output =
  | { output_type: 'stream'; name: 'stdout' | 'stderr'; text: string }
  | { output_type: 'display_data'; data: Record<string, string>; metadata: Record<string, unknown> }
  | { output_type: 'error'; ename: string; evalue: string; traceback: string[] };

export interface CodeCell {
  cell_type: 'code';
  id: string;
  execution_count: number | null;
  metadata: Record<string, unknown>;
  source: string;
  outputs: Output[];
}

export interface MarkdownCell {
  cell_type: 'markdown';
  id: string;
  metadata: Record<string, unknown>;
  source: string;
}

export interface Notebook {
  nbformat: 4;
  nbformat_minor: 5;
  metadata: Record<string, unknown>;
  cells: Array<CodeCell | MarkdownCell>;
}
