import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ArtifactStore, RunRecord } from '../storage/artifactStore';
import { FileBadge, artifactItem, copiedApartSentence, fileNodes, runDocument, storageUse, type ArtifactNode } from './artifactItems';
import type { CommandTable } from './commands';
import { COMMAND, VIEW } from './ids';
import type { Ui } from './ui';
import { plainMarkdown } from './vscodeUi';

export type { ArtifactNode } from './artifactItems';

/**
 * The sidebar tree: chat session → run (time, exit status, first line of the program) → files.
 * Read from the store on demand, so the view is right after a reload and refreshes whenever the
 * store reports a change. What each node shows is decided in artifactItems.ts.
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
    return node.kind === 'run' ? fileNodes(node) : [];
  }

  getTreeItem(node: ArtifactNode): vscode.TreeItem {
    const d = artifactItem(node, { filePath: (...a) => this.store.filePath(...a) });
    const collapsible = d.collapsible === 'expanded' ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None;
    // A file item is made from its URI, so VS Code gives it the file's icon.
    const item = d.filePath ? new vscode.TreeItem(vscode.Uri.file(d.filePath), collapsible) : new vscode.TreeItem(d.label, collapsible);
    item.id = d.id;
    item.label = d.label;
    item.description = d.description;
    if (d.tooltip) item.tooltip = 'markdown' in d.tooltip ? plainMarkdown(d.tooltip.markdown) : d.tooltip.text;
    if (d.icon) item.iconPath = new vscode.ThemeIcon(d.icon.id, d.icon.color ? new vscode.ThemeColor(d.icon.color) : undefined);
    item.contextValue = d.contextValue;
    if (d.command) item.command = { ...d.command, arguments: [node] };
    return item;
  }

  /** A node's parent, for the view to reveal it (a run under its chat, a file under its run). */
  async getParent(node: ArtifactNode): Promise<ArtifactNode | undefined> {
    if (node.kind === 'file') return { kind: 'run', sessionDigest: node.sessionDigest, record: node.record };
    if (node.kind === 'run') {
      const session = (await this.store.listSessions()).find((s) => s.sessionDigest === node.sessionDigest);
      return session ? { kind: 'session', session } : undefined;
    }
    return undefined;
  }

  /** The file URI of a file node (for open, save, reveal, copy path). */
  uriOf(node: ArtifactNode & { kind: 'file' }): vscode.Uri {
    return vscode.Uri.file(this.store.filePath(node.sessionDigest, node.record.runId, node.file.name));
  }
}

/** The scheme of a run's read-only document ("Show Program and Output"). */
export const RUN_SCHEME = 'codeact-run';

/** /<chat digest>/<run id>/Run <when>.md: the tab's title is the run's time, its language Markdown. */
function runDocumentUri(sessionDigest: string, r: RunRecord): vscode.Uri {
  const when = new Date(r.startedAt).toLocaleString().replace(/[/\\]/g, '-');
  return vscode.Uri.from({ scheme: RUN_SCHEME, path: `/${sessionDigest}/${r.runId}/Run ${when}.md` });
}

async function runDocumentText(store: ArtifactStore, uri: vscode.Uri): Promise<string> {
  const [, sessionDigest, runId] = uri.path.split('/');
  const r = sessionDigest && runId ? (await store.listRuns(sessionDigest)).find((x) => x.runId === runId) : undefined;
  if (!r) return 'This run is no longer kept (deleted, or removed to stay within codeactSandbox.artifactsBudgetMb).';
  const streams = (await Promise.all((['stdout', 'stderr'] as const).map((s) => store.streamFile(sessionDigest!, r.runId, s)))).filter((p): p is string => p !== undefined);
  return runDocument(r, streams, new Date(r.startedAt).toLocaleString());
}

type ViewCommand = 'refresh' | 'openFile' | 'showRun' | 'saveFile' | 'revealFile' | 'copyPath' | 'deleteRun' | 'deleteSession' | 'clearAll';

/** Registers the view (its disposables go into `subscriptions`) and returns its commands. */
export function registerArtifactView(
  store: ArtifactStore,
  ui: Ui,
  subscriptions: vscode.Disposable[],
  /** The storage budget (artifactsBudgetMb), shown beside the view's title with what is used. */
  budgetBytes: () => number,
  /** A chat's records were deleted (undefined: all chats'): what else is kept for it goes too. */
  chatDeleted: (sessionDigest: string | undefined) => void = () => {},
): { provider: ArtifactTreeProvider; commands: CommandTable<(typeof COMMAND)[ViewCommand]>; reveal(sessionDigest: string, runId: string): Promise<void> } {
  const provider = new ArtifactTreeProvider(store);
  subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(RUN_SCHEME, { provideTextDocumentContent: (uri) => runDocumentText(store, uri) }));
  const view = vscode.window.createTreeView(VIEW.artifacts, { treeDataProvider: provider, showCollapseAll: true });
  subscriptions.push(provider, view);
  // A badge counts the files that arrived while the view was out of sight; seeing it clears it.
  const badge = new FileBadge((count) => {
    view.badge = count > 0 ? { value: count, tooltip: `${count} new file${count === 1 ? '' : 's'} from the sandbox` } : undefined;
  });
  const showUse = () =>
    void store.totalBytes().then(
      (total) => {
        view.description = storageUse(total, budgetBytes());
      },
      () => undefined,
    );
  showUse();
  subscriptions.push(
    store.onDidAddFiles((n) => badge.add(n, view.visible)),
    view.onDidChangeVisibility((e) => e.visible && badge.clear()),
    store.onDidChange(showUse),
    vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('codeactSandbox.artifactsBudgetMb') && showUse()),
  );
  const fileNode = (n: ArtifactNode | undefined): (ArtifactNode & { kind: 'file' }) | undefined => (n?.kind === 'file' ? n : undefined);

  const commands = {
    [COMMAND.refresh]: () => store.reload(),
    [COMMAND.openFile]: async (n?: ArtifactNode) => {
      const f = fileNode(n);
      if (f) await vscode.commands.executeCommand('vscode.open', provider.uriOf(f));
    },
    [COMMAND.showRun]: async (n?: ArtifactNode) => {
      if (n?.kind !== 'run') return;
      // A document of its own scheme: read-only, never dirty, nothing to save when it closes.
      const doc = await vscode.workspace.openTextDocument(runDocumentUri(n.sessionDigest, n.record));
      await vscode.window.showTextDocument(doc, { preview: true });
      return doc.uri.toString();
    },
    [COMMAND.saveFile]: async (n?: ArtifactNode) => {
      const f = fileNode(n);
      if (!f) return;
      const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
      const target = await vscode.window.showSaveDialog({
        title: `Save ${f.file.name} into the workspace`,
        ...(folder ? { defaultUri: vscode.Uri.joinPath(folder, path.posix.basename(f.file.name)) } : {}),
      });
      // Only an explicit choice of the user writes anything outside the extension's storage.
      if (target) await vscode.workspace.fs.copy(provider.uriOf(f), target, { overwrite: true });
    },
    [COMMAND.revealFile]: async (n?: ArtifactNode) => {
      const f = fileNode(n);
      if (f) await vscode.commands.executeCommand('revealFileInOS', provider.uriOf(f));
    },
    [COMMAND.copyPath]: async (n?: ArtifactNode) => {
      const f = fileNode(n);
      if (!f) return;
      const file = provider.uriOf(f).fsPath;
      await vscode.env.clipboard.writeText(file);
      // The store is on the computer this extension runs on; a remote window's terminal is elsewhere.
      const apart = (vscode.workspace.workspaceFolders ?? []).some((w) => w.uri.scheme !== 'file');
      if (apart) ui.showWarning(copiedApartSentence(file, vscode.env.remoteName), { title: 'Save to Workspace', command: COMMAND.saveFile, args: [n] });
    },
    // Deletes ask first (a test passes { confirmed: true }): a run's files exist nowhere else.
    [COMMAND.deleteRun]: async (n?: ArtifactNode, options?: { confirmed?: boolean }) => {
      if (n?.kind !== 'run') return;
      const files = n.record.files.length;
      const question = `Delete this run${files ? ` and its ${files} file${files === 1 ? '' : 's'}` : ''}? They are kept nowhere else.`;
      if (options?.confirmed === true || (await ui.askModal(question, 'Delete')) === 'Delete') await store.deleteRun(n.sessionDigest, n.record.runId);
    },
    [COMMAND.deleteSession]: async (n?: ArtifactNode, options?: { confirmed?: boolean }) => {
      if (n?.kind !== 'session') return;
      const runs = n.session.runCount;
      const question = `Delete this chat's ${runs} run${runs === 1 ? '' : 's'} and their files? They are kept nowhere else.`;
      if (options?.confirmed === true || (await ui.askModal(question, 'Delete')) === 'Delete') {
        await store.deleteSession(n.session.sessionDigest);
        chatDeleted(n.session.sessionDigest);
      }
    },
    [COMMAND.clearAll]: async (options?: { confirmed?: boolean }) => {
      const ok = options?.confirmed === true || (await ui.askModal('Delete all runs and files kept by CodeAct Sandbox?', 'Delete All')) === 'Delete All';
      if (ok) {
        await store.clear();
        chatDeleted(undefined);
      }
    },
  };
  /** Shows a chat's new run in the view, where the person is looking at it already (it does not open the view). */
  const reveal = async (sessionDigest: string, runId: string): Promise<void> => {
    if (!view.visible) return;
    const record = (await store.listRuns(sessionDigest)).find((r) => r.runId === runId);
    if (record) await view.reveal({ kind: 'run', sessionDigest, record }, { select: true, focus: false, expand: true });
  };
  return { provider, commands, reveal };
}
