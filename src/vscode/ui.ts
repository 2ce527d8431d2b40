/**
 * The effects the extension's logic needs from VS Code, as small interfaces: the logic modules
 * take these and import `vscode` only as types, so they load in plain Node and are tested with
 * fakes. vscodeUi.ts implements them on the real API; extension.ts builds it.
 */
import type { InspectedSetting } from '../core/trust';

export interface ProgressUpdate {
  message?: string;
  /** Percent of the whole, added to what was reported before. */
  increment?: number;
}

/** A button on a message: the command it runs (with its arguments) when pressed. */
export interface UiAction {
  title: string;
  command: string;
  args?: readonly unknown[];
}

/** The buttons an error or warning offers, so a person can act on it where it is said. */
export const ACTION = {
  showLog: { title: 'Show Log', command: 'codeactSandbox.showLog' },
  prepare: { title: 'Retry', command: 'codeactSandbox.prepareImage' },
  rebuild: { title: 'Retry', command: 'codeactSandbox.rebuildDevcontainer' },
  chooseImage: { title: 'Choose Image', command: 'workbench.action.openSettings', args: ['codeactSandbox.image'] },
  openSetting: (key: string): UiAction => ({ title: 'Open Setting', command: 'workbench.action.openSettings', args: [key] }),
} as const;

/** What the user sees: messages, dialogs, progress notifications, the status bar item. */
export interface Ui {
  /** A modal warning; the item the user chose, or undefined when the dialog was dismissed. */
  askModal(message: string, ...items: string[]): Promise<string | undefined>;
  showInfo(message: string): void;
  /** A warning or an error, with buttons that run their commands. */
  showWarning(message: string, ...actions: UiAction[]): void;
  showError(message: string, ...actions: UiAction[]): void;
  /** A cancellable progress notification while `run` works; cancelling it aborts `signal`. */
  withProgress<T>(title: string, run: (report: (update: ProgressUpdate) => void, signal: AbortSignal) => Promise<T>): Promise<T>;
  /** A progress notification that cannot be cancelled, while `run` works (a short check the person asked for). */
  busy<T>(title: string, run: () => Promise<T>): Promise<T>;
  /** Opens a web page in the browser. */
  openLink(url: string): void;
  /** Changes a setting in the user's settings (any section: `codeactSandbox.dockerHost`, `remote.extensionKind`) from its user value. */
  updateUserSetting(key: string, value: (current: unknown) => unknown): Promise<void>;
  createStatusItem(options: { id: string; name: string; command: string }): StatusItem;
  /** A non-modal warning with buttons; the one chosen, or undefined when dismissed. */
  notify(message: string, ...items: string[]): Promise<string | undefined>;
  /** Sets a context key (`when` clauses of the view's welcome content read it). */
  setContext(key: string, value: unknown): void;
  executeCommand(command: string, ...args: unknown[]): void;
  /** Opens a new agent-mode chat with `message` in its input, not sent: the person adds to it and sends it. */
  openNewChat(message: string): Promise<void>;
  /** An input box; undefined when dismissed. `check` gives the sentence shown under a value it refuses. */
  askText(options: TextQuestion): Promise<string | undefined>;
  /** A quick pick of `items`; the one chosen, or undefined when dismissed. */
  pick<T extends PickItem>(items: readonly T[], options: { title: string; placeHolder?: string }): Promise<T | undefined>;
}

export interface TextQuestion {
  title: string;
  prompt?: string;
  /** What the box starts with. */
  value?: string;
  /** Typed characters are hidden (a secret's value). */
  password?: boolean;
  check?: (value: string) => string | undefined;
}

export interface PickItem {
  label: string;
  description?: string;
}

export interface StatusItem {
  /** Sets the text and the tooltip (Markdown) and shows the item; `warning`: in the warning colours, clicking runs `command` instead. */
  show(text: string, tooltipMarkdown: string, warning?: { command: string }): void;
  dispose(): void;
}

/** The open workspace, as far as the logic asks about it. Read at every call: trust and folders change. */
export interface WorkspaceEnv {
  isTrusted(): boolean;
  /** The first workspace folder on the local file system (a Dev Container is built from disk). */
  localFolder(): string | undefined;
  /** A workspace folder is open on another machine (a remote window whose extension runs on this computer). */
  remoteFolder(): boolean;
  /** The extension's settings section as it is now. */
  configuration(): { inspect(key: string): InspectedSetting | undefined };
}

/** Per-workspace storage that survives reloads (VS Code's `workspaceState` fits as it is). */
export interface WorkspaceState {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): PromiseLike<void>;
}
