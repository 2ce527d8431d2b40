import * as path from 'node:path';
import * as vscode from 'vscode';
import { ArtifactStore, type RunRecord, type SessionSummary, type StoredFile } from '../storage/artifactStore';
import { COMMAND, VIEW } from './ids';

export type ArtifactNode =
  | { kind: 'session'; session: SessionSummary }
  | { kind: 'run'; sessionDigest: string; record: RunRecord }
  | { kind: 'file'; sessionDigest: string; record: RunRecord; file: StoredFile };

/**
 * The sidebar tree: chat session → run (time, exit status, first line of the program) → files.
 * Everything is read from the store on demand, so the view is right after a reload and
 * refreshes whenever the store reports a change.
 */
export class ArtifactTreeProvider implements vscode.TreeDataProvider<ArtifactNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ArtifactNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscription: { dispose(): void };

  constructor(readonly store: ArtifactStore) {
    this.subscription = store.onDidChange(() => this.refresh());
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }

  async getChildren(node?: ArtifactNode): Promise<ArtifactNode[]> {
    if (!node) return (await this.store.listSessions()).map((session) => ({ kind: 'session', session }));
    if (node.kind === 'session') {
      return (await this.store.listRuns(node.session.sessionDigest)).map((record) => ({ kind: 'run', sessionDigest: node.session.sessionDigest, record }));
    }
    if (node.kind === 'run') {
      return node.record.files.map((file) => ({ kind: 'file', sessionDigest: node.sessionDigest, record: node.record, file }));
    }
    return [];
  }

  getTreeItem(node: ArtifactNode): vscode.TreeItem {
    if (node.kind === 'session') {
      const item = new vscode.TreeItem(node.session.sessionLabel, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `session:${node.session.sessionDigest}`;
      item.description = `${node.session.runCount} run${node.session.runCount === 1 ? '' : 's'}`;
      item.iconPath = new vscode.ThemeIcon('comment-discussion');
      item.contextValue = 'codeactSession';
      return item;
    }
    if (node.kind === 'run') {
      const r = node.record;
      const when = new Date(r.startedAt).toLocaleTimeString();
      const status = r.timedOut ? 'timed out' : r.cancelled ? 'cancelled' : r.exitCode === 0 ? 'ok' : `exit ${r.exitCode ?? '?'}`;
      const item = new vscode.TreeItem(
        `${when} ${firstLine(r.program)}`,
        r.files.length ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
      );
      item.id = `run:${node.sessionDigest}/${r.runId}`;
      item.description = `${status}${r.files.length ? ` · ${r.files.length} file${r.files.length === 1 ? '' : 's'}` : ''}`;
      item.tooltip = new vscode.MarkdownString().appendCodeblock(r.program.slice(0, 2000), 'python');
      item.iconPath = new vscode.ThemeIcon(
        r.exitCode === 0 && !r.timedOut && !r.cancelled ? 'pass' : 'error',
        new vscode.ThemeColor(r.exitCode === 0 && !r.timedOut && !r.cancelled ? 'testing.iconPassed' : 'testing.iconFailed'),
      );
      item.contextValue = 'codeactRun';
      item.command = { command: COMMAND.showRun, title: 'Show Program and Output', arguments: [node] };
      return item;
    }
    const uri = vscode.Uri.file(this.store.filePath(node.sessionDigest, node.record.runId, node.file.name));
    const item = new vscode.TreeItem(uri, vscode.TreeItemCollapsibleState.None);
    item.id = `file:${node.sessionDigest}/${node.record.runId}/${node.file.name}`;
    item.label = node.file.name;
    item.description = formatSize(node.file.size);
    item.tooltip = `${node.file.name} (${formatSize(node.file.size)}${node.file.mediaType ? `, ${node.file.mediaType}` : ''})`;
    item.contextValue = 'codeactFile';
    item.command = { command: COMMAND.openFile, title: 'Open', arguments: [node] };
    return item;
  }

  /** The file URI of a file node (for open, save, reveal, copy path). */
  uriOf(node: ArtifactNode & { kind: 'file' }): vscode.Uri {
    return vscode.Uri.file(this.store.filePath(node.sessionDigest, node.record.runId, node.file.name));
  }
}

function firstLine(program: string): string {
  const line = program.split('\n').find((l) => l.trim() && !l.trim().startsWith('#')) ?? program.split('\n')[0] ?? '';
  return line.length > 60 ? `${line.slice(0, 57)}...` : line.trim();
}

function formatSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/** Registers the view and its commands; every disposable goes into `subscriptions`. */
export function registerArtifactView(store: ArtifactStore, subscriptions: vscode.Disposable[]): ArtifactTreeProvider {
  const provider = new ArtifactTreeProvider(store);
  const view = vscode.window.createTreeView(VIEW.artifacts, { treeDataProvider: provider, showCollapseAll: true });
  subscriptions.push(provider, view);
  const fileNode = (n: ArtifactNode | undefined): (ArtifactNode & { kind: 'file' }) | undefined => (n?.kind === 'file' ? n : undefined);

  subscriptions.push(
    vscode.commands.registerCommand(COMMAND.refresh, () => store.reload()),
    vscode.commands.registerCommand(COMMAND.openFile, async (n?: ArtifactNode) => {
      const f = fileNode(n);
      if (f) await vscode.commands.executeCommand('vscode.open', provider.uriOf(f));
    }),
    vscode.commands.registerCommand(COMMAND.showRun, async (n?: ArtifactNode) => {
      if (n?.kind !== 'run') return;
      const r = n.record;
      const streams = (await Promise.all((['stdout', 'stderr'] as const).map((s) => store.streamFile(n.sessionDigest, r.runId, s)))).filter(
        (p): p is string => p !== undefined,
      );
      const fence = r.program.includes('```') ? '~~~~' : '```';
      const doc = await vscode.workspace.openTextDocument({
        language: 'markdown',
        content: [
          `# Run ${new Date(r.startedAt).toLocaleString()} (${r.image})`,
          '',
          `${fence}python`,
          r.program,
          fence,
          '',
          '## Result (as the model received it)',
          '',
          '~~~~text',
          r.resultText,
          '~~~~',
          ...(streams.length ? ['', `Full output kept in: ${streams.join(', ')}`] : []),
          ...(r.filesIn.length ? ['', `Files shared in: ${r.filesIn.join(', ')}`] : []),
        ].join('\n'),
      });
      await vscode.window.showTextDocument(doc, { preview: true });
    }),
    vscode.commands.registerCommand(COMMAND.saveFile, async (n?: ArtifactNode) => {
      const f = fileNode(n);
      if (!f) return;
      const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
      const target = await vscode.window.showSaveDialog({
        title: `Save ${f.file.name} into the workspace`,
        ...(folder ? { defaultUri: vscode.Uri.joinPath(folder, path.posix.basename(f.file.name)) } : {}),
      });
      // Only an explicit choice of the user writes anything outside the extension's storage.
      if (target) await vscode.workspace.fs.copy(provider.uriOf(f), target, { overwrite: true });
    }),
    vscode.commands.registerCommand(COMMAND.revealFile, async (n?: ArtifactNode) => {
      const f = fileNode(n);
      if (f) await vscode.commands.executeCommand('revealFileInOS', provider.uriOf(f));
    }),
    vscode.commands.registerCommand(COMMAND.copyPath, async (n?: ArtifactNode) => {
      const f = fileNode(n);
      if (f) await vscode.env.clipboard.writeText(provider.uriOf(f).fsPath);
    }),
    vscode.commands.registerCommand(COMMAND.deleteRun, async (n?: ArtifactNode) => {
      if (n?.kind === 'run') await store.deleteRun(n.sessionDigest, n.record.runId);
    }),
    vscode.commands.registerCommand(COMMAND.deleteSession, async (n?: ArtifactNode) => {
      if (n?.kind === 'session') await store.deleteSession(n.session.sessionDigest);
    }),
    vscode.commands.registerCommand(COMMAND.clearAll, async (options?: { confirmed?: boolean }) => {
      const ok =
        options?.confirmed === true ||
        (await vscode.window.showWarningMessage('Delete all runs and files kept by CodeAct Sandbox?', { modal: true }, 'Delete All')) ===
          'Delete All';
      if (ok) await store.clear();
    }),
  );
  return provider;
}
