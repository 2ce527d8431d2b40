/**
 * A chat's runs as a Jupyter notebook (nbformat 4.5): one code cell per run holding its program,
 * the run's outputs as Jupyter outputs, and a Markdown cell on top saying which sandbox ran them.
 * Pure: the caller reads the records and the files; nothing here touches the disk.
 */
import { formatBytes } from '../../core/format';
import { inlineCode } from '../../core/markdown';
import type { RunRecord, StoredFile } from '../runRecord';
import { isSvg, svgImageHtml } from './svg';
import type { CodeCell, MarkdownCell, Notebook, Output } from './nbformat';

/** A stored file as the notebook needs it: its bytes, or why there are none. */
export type FileContent = { bytes: Buffer } | { gone: true } | { tooLarge: true };

export interface NotebookInput {
  sessionLabel: string;
  /** The chat's runs, oldest first. */
  runs: readonly RunRecord[];
  /** The bytes of a file that may be shown inline (an image, or an SVG by its name); others are only named. */
  file(run: RunRecord, file: StoredFile): FileContent;
  /** When the notebook is made (the header says it). */
  now: Date;
}

export interface NotebookOptions {
  /**
   * Session mode: leave out the runs whose state was not kept, and those before the last reset,
   * so that running the notebook top to bottom rebuilds the state the chat ended with.
   */
  keptStateOnly?: boolean;
}

/** Images larger than this are named with their size rather than put into the notebook. */
export const INLINE_IMAGE_MAX_BYTES = 5 * 1024 * 1024;
/** All inline images of one notebook together: past it, later images are named only (the notebook stays one string JSON can hold). */
export const INLINE_TOTAL_MAX_BYTES = 50 * 1024 * 1024;

/** Tells nbclient and papermill that the cell's error is expected: running on does not stop there. */
export const RAISES_TAG = 'raises-exception';
/** Marks a session-mode run whose state the next run did not start from. */
export const NOT_KEPT_TAG = 'codeact-state-not-kept';

export function notebookRuns(runs: readonly RunRecord[], options: NotebookOptions = {}): RunRecord[] {
  if (!options.keptStateOnly) return [...runs];
  // A reset that failed left the state as it was: only a kept one starts the state afresh.
  let from = 0;
  runs.forEach((r, i) => {
    if (r.state?.reset && r.state.kept) from = i;
  });
  return runs.slice(from).filter((r) => !r.state || r.state.kept);
}

/** How many runs `keptStateOnly` leaves out. */
export function leftOutWhenKeptOnly(runs: readonly RunRecord[]): number {
  return runs.length - notebookRuns(runs, { keptStateOnly: true }).length;
}

export function buildNotebook(input: NotebookInput, options: NotebookOptions = {}): Notebook {
  const runs = notebookRuns(input.runs, options);
  const cells: Array<CodeCell | MarkdownCell> = [header(input, runs, options)];
  const budget = { left: INLINE_TOTAL_MAX_BYTES };
  runs.forEach((run, i) => cells.push(codeCell(run, i + 1, input, budget)));
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' },
      language_info: { name: 'python' },
      codeact: { session: input.sessionLabel, exportedAt: input.now.toISOString(), runs: runs.length, ...(options.keptStateOnly ? { keptStateOnly: true } : {}) },
    },
    cells,
  };
}

function header(input: NotebookInput, runs: readonly RunRecord[], options: NotebookOptions): MarkdownCell {
  const first = runs[0];
  const last = runs[runs.length - 1];
  const lines = [`# ${input.sessionLabel}`, ''];
  if (first && last) {
    lines.push(`${runs.length} run${runs.length === 1 ? '' : 's'} in the CodeAct Sandbox, ${when(first.startedAt)} to ${when(last.startedAt)} (exported ${when(input.now.toISOString())}).`, '');
  }
  // Names from the records, shown as they are in the rendered cell (core/markdown.ts).
  lines.push(`- **Image:** ${distinct(runs.map((r) => inlineCode(r.image))).join(', ')}`);
  const runtimes = distinct(runs.map((r) => r.runtime ?? ''));
  if (runtimes.some(Boolean)) lines.push(`- **Runtime:** ${runtimes.map((r) => (r ? inlineCode(r) : 'unknown')).join(', ')}`);
  const limits = distinct(runs.filter((r) => r.timeoutMs && r.memoryMb).map((r) => `${seconds(r.timeoutMs!)} per run, ${r.memoryMb} MB of memory`));
  if (limits.length) lines.push(`- **Limits:** ${limits.join('; ')}; ${networkWords(runs)}`);
  const session = runs.filter((r) => r.state).length;
  lines.push(
    `- **State:** ${
      session === 0
        ? 'fresh: each run was a new Python process, so a cell sees nothing of the cells before it'
        : session === runs.length
          ? 'session: module globals carried over from one run to the next'
          : `session for ${session} of ${runs.length} runs, fresh for the others`
    }`,
  );
  if (options.keptStateOnly) lines.push('', 'Runs whose state was not kept, and runs before the last reset, are left out: running the cells top to bottom rebuilds the state the chat ended with.');
  if (runs.some((r) => r.filesIn.length)) lines.push('', 'Each run ran in a fresh folder holding the workspace files it shared (named in its first line): run the notebook next to them.');
  return { cell_type: 'markdown', id: 'codeact-header', metadata: {}, source: lines.join('\n') };
}

/** What network the runs had: none, or the allowed domains only (a run with an allow-list keeps its connections). */
function networkWords(runs: readonly RunRecord[]): string {
  const open = runs.filter((r) => r.network).length;
  if (open === 0) return 'no network';
  const allowed = 'network to the allowed domains only, through a recording proxy';
  return open === runs.length ? allowed : `${allowed} for ${open} of ${runs.length} runs, no network for the others`;
}

/** What is left of the notebook's inline image budget, shared by its cells. */
interface InlineBudget {
  left: number;
}

function codeCell(run: RunRecord, count: number, input: NotebookInput, budget: InlineBudget): CodeCell {
  const failed = failure(run);
  const tags = [...(failed ? [RAISES_TAG] : []), ...(run.state && !run.state.kept ? [NOT_KEPT_TAG] : [])];
  const shared = run.filesIn.length ? `# shared from the workspace: ${run.filesIn.join(', ')}\n` : '';
  return {
    cell_type: 'code',
    id: cellId(run.runId),
    execution_count: count,
    metadata: {
      ...(tags.length ? { tags } : {}),
      codeact: {
        runId: run.runId,
        startedAt: run.startedAt,
        durationMs: run.durationMs,
        exitCode: run.exitCode,
        filesIn: run.filesIn,
        ...(run.state ? { state: run.state } : {}),
      },
    },
    source: shared + run.program,
    outputs: outputs(run, failed, input, budget),
  };
}

function outputs(run: RunRecord, failed: { ename: string; evalue: string } | undefined, input: NotebookInput, budget: InlineBudget): Output[] {
  const out: Output[] = [];
  if (run.stdout === undefined || run.stderr === undefined) {
    // A record from before the streams were kept apart: what the model received is all there is.
    out.push(text(run.resultText));
  } else {
    if (run.stdout) out.push({ output_type: 'stream', name: 'stdout', text: withNewline(run.stdout) });
    if (run.stderr) out.push({ output_type: 'stream', name: 'stderr', text: withNewline(run.stderr) });
    const more = [
      run.stdoutTruncated && run.stdoutBytes !== undefined ? `standard output (${formatBytes(run.stdoutBytes)}) in stdout.txt` : '',
      run.stderrTruncated && run.stderrBytes !== undefined ? `standard error (${formatBytes(run.stderrBytes)}) in stderr.txt` : '',
    ].filter(Boolean);
    if (more.length) out.push(text(`Shown as the model saw it; kept whole with the run: ${more.join(', ')}.`));
  }
  for (const file of run.files) out.push(fileOutput(run, file, input, budget));
  if (run.state && !run.state.kept) out.push(text("This run's state was not kept: the next run started from the state before it."));
  // The traceback is what Jupyter front ends show of an error; the program's own is in stderr above.
  if (failed) out.push({ output_type: 'error', ename: failed.ename, evalue: failed.evalue, traceback: [`${failed.ename}: ${failed.evalue}`] });
  return out;
}

function fileOutput(run: RunRecord, file: StoredFile, input: NotebookInput, budget: InlineBudget): Output {
  const named = `${file.name} (${formatBytes(file.size)})`;
  const image = inlineType(file);
  if (!image) return text(`Saved ${named}.`);
  if (file.size > budget.left) return text(`Saved ${named}; not shown here: the notebook holds ${formatBytes(INLINE_TOTAL_MAX_BYTES)} of images at most.`);
  const content = input.file(run, file);
  if ('gone' in content) return text(`Saved ${named}; no longer stored (removed to keep the storage within its budget).`);
  if ('tooLarge' in content) return text(`Saved ${named}; too large to show here.`);
  if (image === 'image/svg+xml') {
    if (!isSvg(content.bytes)) return text(`Saved ${named}.`);
    budget.left -= content.bytes.length;
    return { output_type: 'display_data', data: { 'text/html': svgImageHtml(content.bytes, file.name), 'text/plain': named }, metadata: {} };
  }
  budget.left -= content.bytes.length;
  return { output_type: 'display_data', data: { [image]: content.bytes.toString('base64'), 'text/plain': named }, metadata: {} };
}

/** The type a file is shown inline as: a raster type the host sniffed when it stored the file, or SVG by its name (checked later). */
export function inlineType(file: StoredFile): string | undefined {
  if (file.size > INLINE_IMAGE_MAX_BYTES) return undefined;
  if (file.mediaType === 'image/png' || file.mediaType === 'image/jpeg' || file.mediaType === 'image/gif') return file.mediaType;
  if (!file.mediaType && /\.svg$/i.test(file.name)) return 'image/svg+xml';
  return undefined;
}

/** What stopped a run that did not end well, in words: an error output's name and value. */
export function failure(run: RunRecord): { ename: string; evalue: string } | undefined {
  if (run.timedOut) return { ename: 'Timed out', evalue: `the program did not finish within ${run.timeoutMs ? seconds(run.timeoutMs) : 'the time limit'} and was stopped` };
  if (run.cancelled) return { ename: 'Stopped', evalue: 'the run was cancelled by the user' };
  if (run.outputLimited) return { ename: 'Output limit', evalue: 'the program printed more than the output limit and was stopped' };
  if (run.oomKilled) return { ename: 'Out of memory', evalue: `the program was killed for using more than the sandbox's ${run.memoryMb ? `${run.memoryMb} MB of ` : ''}memory` };
  if (run.exitCode !== 0) return { ename: 'Exit code', evalue: `the program exited with code ${run.exitCode ?? 'unknown'}` };
  return undefined;
}

function text(s: string): Output {
  return { output_type: 'display_data', data: { 'text/plain': s }, metadata: {} };
}

function withNewline(s: string): string {
  return s.endsWith('\n') ? s : `${s}\n`;
}

/** nbformat 4.5 cell ids: 1 to 64 of [a-zA-Z0-9-_]. A run id is already of that kind; anything else is mapped. */
export function cellId(runId: string): string {
  return `run-${runId.replace(/[^a-zA-Z0-9_-]/g, '_')}`.slice(0, 64);
}

function distinct(values: readonly string[]): string[] {
  return [...new Set(values)];
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

function when(iso: string): string {
  return `${iso.slice(0, 16).replace('T', ' ')} UTC`;
}
