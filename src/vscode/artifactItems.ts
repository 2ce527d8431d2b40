/**
 * What the artifact tree shows, as plain data: label, description, tooltip, icon and command of
 * every node, and the document "Show Program and Output" opens. artifactTree.ts turns these into
 * VS Code's tree items.
 */
import { codeBlock, inlineCode } from '../core/markdown';
import { connectionLine, networkSummary } from '../core/network';
import type { RunRecord, SessionSummary, StoredFile } from '../storage/artifactStore';
import { COMMAND } from './ids';

export type ArtifactNode =
  | { kind: 'session'; session: SessionSummary }
  | { kind: 'run'; sessionDigest: string; record: RunRecord }
  | { kind: 'file'; sessionDigest: string; record: RunRecord; file: StoredFile };

export interface ArtifactItem {
  id: string;
  label: string;
  description: string;
  /** Plain text, or Markdown (a program shown as a Python code block). */
  tooltip?: { text: string } | { markdown: string };
  /** A codicon id and a theme color id. */
  icon?: { id: string; color?: string };
  collapsible: 'expanded' | 'none';
  contextValue: string;
  /** Run with the node as its argument. */
  command?: { command: string; title: string };
  /** A file node's path on disk (its resource). */
  filePath?: string;
}

export interface ItemContext {
  /** Where a stored file is (the store's `filePath`). */
  filePath(sessionDigest: string, runId: string, name: string): string;
  /** The run's start as the label shows it (the locale's time by default). */
  time?(startedAt: Date): string;
  /** A chat's start as its label shows it: the date too, since chats outlive a day (the locale's by default). */
  day?(startedAt: Date): string;
}

export function artifactItem(node: ArtifactNode, context: ItemContext): ArtifactItem {
  const time = context.time ?? ((d: Date) => d.toLocaleTimeString());
  const day = context.day ?? ((d: Date) => d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }));
  if (node.kind === 'session') {
    // A chat as a person remembers it: when it began and what it first ran; its id beside.
    const s = node.session;
    const n = s.runCount;
    return {
      id: `session:${s.sessionDigest}`,
      label: `${day(new Date(s.firstStartedAt))} ${firstLine(s.firstProgram)}`,
      description: `${s.sessionLabel} · ${n} run${n === 1 ? '' : 's'}`,
      icon: { id: 'comment-discussion' },
      collapsible: 'expanded',
      contextValue: 'codeactSession',
    };
  }
  const r = node.record;
  if (node.kind === 'run') {
    const ok = r.exitCode === 0 && !r.timedOut && !r.cancelled;
    const files = r.files.length;
    return {
      id: `run:${node.sessionDigest}/${r.runId}`,
      label: `${time(new Date(r.startedAt))} ${firstLine(r.program)}`,
      description: `${runStatus(r)}${files ? ` · ${files} file${files === 1 ? '' : 's'}` : ''}${r.network ? ` · ${networkSummary(r.network)}` : ''}`,
      // VS Code's own appendCodeblock counts only backticks at a line's start, so an indented
      // fence in the program would end the block: core/markdown.ts sizes the fence itself.
      tooltip: { markdown: codeBlock(r.program.slice(0, 2000), 'python') },
      icon: ok ? { id: 'pass', color: 'testing.iconPassed' } : { id: 'error', color: 'testing.iconFailed' },
      collapsible: files ? 'expanded' : 'none',
      // A kept session run can be gone back to ("Go Back to This Run's State").
      contextValue: r.state?.kept ? 'codeactRunKept' : 'codeactRun',
      command: { command: COMMAND.showRun, title: 'Show Program and Output' },
    };
  }
  const f = node.file;
  return {
    id: `file:${node.sessionDigest}/${r.runId}/${f.name}`,
    label: f.name,
    description: formatSize(f.size),
    tooltip: { text: `${f.name} (${formatSize(f.size)}${f.mediaType ? `, ${f.mediaType}` : ''})` },
    collapsible: 'none',
    contextValue: 'codeactFile',
    command: { command: COMMAND.openFile, title: 'Open' },
    filePath: context.filePath(node.sessionDigest, r.runId, f.name),
  };
}

/** The children of a run node (its files); sessions and runs come from the store. */
export function fileNodes(node: ArtifactNode & { kind: 'run' }): ArtifactNode[] {
  return node.record.files.map((file) => ({ kind: 'file', sessionDigest: node.sessionDigest, record: node.record, file }));
}

/** The Markdown document of one run: the program, the result as the model received it, where the rest is. */
export function runDocument(r: RunRecord, streamFiles: readonly string[], when: string): string {
  // The program and its output were written by the model and the program: neither may end its block in the preview.
  return [
    `# Run ${when} (${inlineCode(r.image)})`,
    '',
    codeBlock(r.program, 'python'),
    '',
    '## Result (as the model received it)',
    '',
    codeBlock(r.resultText, 'text'),
    ...(streamFiles.length ? ['', `Full output kept in: ${streamFiles.map(inlineCode).join(', ')}`] : []),
    ...(r.filesIn.length ? ['', `Files shared in: ${r.filesIn.map(inlineCode).join(', ')}`] : []),
    // Host names are the program's to choose (a blocked one is kept as it was asked for): a text block too.
    ...(r.network ? ['', '## Network', '', codeBlock([`${networkSummary(r.network)}.`, ...r.network.connections.map(connectionLine)].join('\n'), 'text')] : []),
  ].join('\n');
}

export function runStatus(r: Pick<RunRecord, 'timedOut' | 'cancelled' | 'exitCode'>): string {
  return r.timedOut ? 'timed out' : r.cancelled ? 'cancelled' : r.exitCode === 0 ? 'ok' : `exit ${r.exitCode ?? '?'}`;
}

/** The first line that is neither blank nor a comment, cut to 60 characters. */
export function firstLine(program: string): string {
  const line = program.split('\n').find((l) => l.trim() && !l.trim().startsWith('#')) ?? program.split('\n')[0] ?? '';
  return line.length > 60 ? `${line.slice(0, 57)}...` : line.trim();
}

export function formatSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/**
 * The view's description: what the stored runs take of the storage budget (the oldest runs go
 * past it, and with them what a chat's state is rebuilt from), nothing while the store is empty.
 */
export function storageUse(totalBytes: number, budgetBytes: number): string | undefined {
  if (totalBytes <= 0) return undefined;
  return `${formatSize(totalBytes)} of ${Math.round(budgetBytes / (1024 * 1024))} MB`;
}

/** The view's badge: files that arrived while the view was not visible, until it is seen. */
export class FileBadge {
  private count = 0;
  constructor(private readonly show: (count: number) => void) {}
  add(files: number, visible: boolean): void {
    if (files <= 0 || visible) return;
    this.count += files;
    this.show(this.count);
  }
  clear(): void {
    if (this.count === 0) return;
    this.count = 0;
    this.show(0);
  }
}

/** Copy Path in a remote window: the path is on the person's computer, not where the window's terminal runs. */
export function copiedApartSentence(file: string, remoteName: string | undefined): string {
  return `CodeAct Sandbox: copied ${file}, a path on your own computer, where CodeAct Sandbox keeps its files; this window's folder and terminal are on ${remoteName ? `the ${remoteName} side` : 'another machine'}, where that path does not exist. Save to Workspace puts a copy in the workspace there.`;
}
