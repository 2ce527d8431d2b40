import * as vscode from 'vscode';
import { CONFIG_SECTION } from './ids';
import type { StatusItem, Ui, UiAction, WorkspaceEnv } from './ui';

/** The interfaces of ui.ts on the real VS Code API; nothing but forwarding lives here. */
export function createVscodeUi(): Ui {
  return {
    askModal: async (message, ...items) => vscode.window.showWarningMessage(message, { modal: true }, ...items),
    showInfo: (message) => void vscode.window.showInformationMessage(message),
    showWarning: (message, ...actions) => void withActions(vscode.window.showWarningMessage(message, ...actions.map((a) => a.title)), actions),
    showError: (message, ...actions) => void withActions(vscode.window.showErrorMessage(message, ...actions.map((a) => a.title)), actions),
    withProgress: (title, run) =>
      Promise.resolve(
        vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, async (progress, token) => {
          const abort = new AbortController();
          const sub = token.onCancellationRequested(() => abort.abort());
          try {
            return await run((update) => progress.report(update), abort.signal);
          } finally {
            sub.dispose();
          }
        }),
      ),
    busy: (title, run) => Promise.resolve(vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: false }, () => run())),
    openLink: (url) => void vscode.env.openExternal(vscode.Uri.parse(url)),
    updateUserSetting: async (key, value) => {
      const config = vscode.workspace.getConfiguration();
      await config.update(key, value(config.inspect(key)?.globalValue), vscode.ConfigurationTarget.Global);
    },
    notify: async (message, ...items) => vscode.window.showWarningMessage(message, ...items),
    setContext: (key, value) => void vscode.commands.executeCommand('setContext', key, value),
    executeCommand: (command, ...args) => void vscode.commands.executeCommand(command, ...args),
    openNewChat: async (message) => {
      await vscode.commands.executeCommand('workbench.action.chat.newChat');
      await vscode.commands.executeCommand('workbench.action.chat.open', { mode: 'agent', query: message, isPartialQuery: true });
    },
    askText: async ({ title, prompt, value, password, check }) =>
      vscode.window.showInputBox({ title, prompt, value, password, ignoreFocusOut: true, validateInput: check }),
    pick: async (items, { title, placeHolder }) => vscode.window.showQuickPick(items, { title, placeHolder }),
    createStatusItem: ({ id, name, command }): StatusItem => {
      const item = vscode.window.createStatusBarItem(id, vscode.StatusBarAlignment.Right, 10);
      item.name = name;
      item.command = command;
      return {
        show: (text, tooltipMarkdown, warning) => {
          item.text = text;
          item.tooltip = plainMarkdown(tooltipMarkdown);
          item.backgroundColor = warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
          item.command = warning?.command ?? command;
          item.show();
        },
        dispose: () => item.dispose(),
      };
    },
  };
}

/**
 * Markdown that shows what it says and does nothing else: no HTML, no command links, no icons.
 * The text's own parts are made safe where it is built (core/markdown.ts); this is the second wall.
 */
export function plainMarkdown(text: string): vscode.MarkdownString {
  const md = new vscode.MarkdownString(text, false);
  md.isTrusted = false;
  md.supportHtml = false;
  return md;
}

/** Runs the command of the button pressed, if any. */
async function withActions(shown: Thenable<string | undefined>, actions: readonly UiAction[]): Promise<void> {
  const title = await shown;
  const chosen = actions.find((a) => a.title === title);
  if (chosen) await vscode.commands.executeCommand(chosen.command, ...(chosen.args ?? []));
}

export function createVscodeWorkspace(): WorkspaceEnv {
  return {
    isTrusted: () => vscode.workspace.isTrusted,
    localFolder: () => vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file')?.uri.fsPath,
    remoteFolder: () => (vscode.workspace.workspaceFolders ?? []).some((f) => f.uri.scheme !== 'file'),
    configuration: () => vscode.workspace.getConfiguration(CONFIG_SECTION),
  };
}
