// Fakes of the VS Code effects (src/vscode/ui.ts) for unit tests of the logic in src/vscode.
import type { Logger } from '../../../src/core/logger';
import type { InspectedSetting } from '../../../src/core/trust';
import type { PickItem, ProgressUpdate, StatusItem, TextQuestion, Ui, UiAction, WorkspaceEnv, WorkspaceState } from '../../../src/vscode/ui';

/** " [Show Log -> codeactSandbox.showLog | ...]": a message's buttons and what each runs. */
function buttons(actions: readonly UiAction[]): string {
  return actions.length ? ` [${actions.map((a) => `${a.title} -> ${[a.command, ...(a.args ?? []).map(String)].join(' ')}`).join(' | ')}]` : '';
}

/** Records every call; a modal answers with `answer`. */
export class FakeUi implements Ui {
  readonly calls: string[] = [];
  readonly progress: ProgressUpdate[] = [];
  readonly status: { text: string; tooltip: string; warning?: { command: string } }[] = [];
  readonly context = new Map<string, unknown>();
  answer: string | undefined = undefined;
  /** What a notification's button press answers. */
  notifyAnswer: string | undefined = undefined;

  async askModal(message: string, ...items: string[]): Promise<string | undefined> {
    this.calls.push(`askModal: ${message} [${items.join(' | ')}]`);
    return this.answer;
  }
  showInfo(message: string): void {
    this.calls.push(`info: ${message}`);
  }
  showWarning(message: string, ...actions: UiAction[]): void {
    this.calls.push(`warning: ${message}${buttons(actions)}`);
  }
  showError(message: string, ...actions: UiAction[]): void {
    this.calls.push(`error: ${message}${buttons(actions)}`);
  }
  async withProgress<T>(title: string, run: (report: (update: ProgressUpdate) => void, signal: AbortSignal) => Promise<T>): Promise<T> {
    this.calls.push(`withProgress: ${title}`);
    return run((u) => this.progress.push(u), new AbortController().signal);
  }
  async busy<T>(title: string, run: () => Promise<T>): Promise<T> {
    this.calls.push(`busy: ${title}`);
    return run();
  }
  openLink(url: string): void {
    this.calls.push(`open link: ${url}`);
  }
  /** The user settings as the extension wrote them (updateUserSetting). */
  readonly userSettings = new Map<string, unknown>();
  async updateUserSetting(key: string, value: (current: unknown) => unknown): Promise<void> {
    const next = value(this.userSettings.get(key));
    this.calls.push(`user setting: ${key} = ${JSON.stringify(next)}`);
    this.userSettings.set(key, next);
  }
  async notify(message: string, ...items: string[]): Promise<string | undefined> {
    this.calls.push(`notify: ${message} [${items.join(' | ')}]`);
    return this.notifyAnswer;
  }
  setContext(key: string, value: unknown): void {
    this.context.set(key, value);
  }
  executeCommand(command: string, ...args: unknown[]): void {
    this.calls.push(`command: ${[command, ...args.map((a) => JSON.stringify(a))].join(' ')}`);
  }
  async openNewChat(message: string): Promise<void> {
    this.calls.push(`new chat: ${message}`);
  }
  /** What the input boxes answer, in order (undefined: dismissed). */
  readonly textAnswers: (string | undefined)[] = [];
  async askText(question: TextQuestion): Promise<string | undefined> {
    const answer = this.textAnswers.shift();
    const refused = answer === undefined ? undefined : question.check?.(answer);
    this.calls.push(`askText: ${question.title}${question.password ? ' (hidden)' : ''}${refused ? ` refused: ${refused}` : ''}`);
    return refused ? undefined : answer;
  }
  /** What the quick picks answer, by label and in order (undefined: dismissed). */
  readonly pickAnswers: (string | undefined)[] = [];
  async pick<T extends PickItem>(items: readonly T[], options: { title: string }): Promise<T | undefined> {
    this.calls.push(`pick: ${options.title} [${items.map((i) => (i.description ? `${i.label} (${i.description})` : i.label)).join(' | ')}]`);
    const label = this.pickAnswers.shift();
    return items.find((i) => i.label === label);
  }
  createStatusItem(options: { id: string; name: string; command: string }): StatusItem {
    this.calls.push(`createStatusItem: ${options.id} ${options.name} ${options.command}`);
    return {
      show: (text, tooltip, warning) => void this.status.push({ text, tooltip, ...(warning ? { warning } : {}) }),
      dispose: () => void this.calls.push('status disposed'),
    };
  }
  /** The calls that put something in front of the user (all but creating the status item). */
  get shown(): string[] {
    return this.calls.filter((c) => !c.startsWith('createStatusItem'));
  }
}

/** A workspace whose settings are `user` (global) and `workspace` values over the defaults. */
export class FakeWorkspace implements WorkspaceEnv {
  trusted = true;
  folder: string | undefined = undefined;
  /** A folder open on another machine. */
  remote = false;
  user: Record<string, unknown> = {};
  workspace: Record<string, unknown> = {};

  isTrusted(): boolean {
    return this.trusted;
  }
  localFolder(): string | undefined {
    return this.folder;
  }
  remoteFolder(): boolean {
    return this.remote;
  }
  configuration(): { inspect(key: string): InspectedSetting | undefined } {
    return { inspect: (key) => ({ globalValue: this.user[key], workspaceValue: this.workspace[key] }) };
  }
}

export class FakeState implements WorkspaceState {
  readonly values = new Map<string, unknown>();
  get<T>(key: string): T | undefined {
    return this.values.get(key) as T | undefined;
  }
  async update(key: string, value: unknown): Promise<void> {
    this.values.set(key, value);
  }
}

export function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    debug: (m) => void lines.push(`debug: ${m}`),
    info: (m) => void lines.push(`info: ${m}`),
    warn: (m) => void lines.push(`warn: ${m}`),
    error: (m) => void lines.push(`error: ${m}`),
  };
}
