import * as vscode from 'vscode';
import { ToolError, describeError, isToolError } from '../core/errors';
import { sessionKeyFromToken } from '../core/session';
import { parseToolInput, type ToolInput } from '../core/toolInput';
import { runTime } from '../storage/storeIndex';
import { holdsState, prepareCall } from './prepareCall';
import { plainMarkdown } from './vscodeUi';
import { fileLinks } from './resultLinks';
import type { WindowHost } from './windowHost';

/**
 * The execute_code language-model tool: validates its own input, keys the sandbox by the chat
 * session from the invocation token (never by anything the model says), runs the call through the
 * window's host and returns the text. Failures reach the model as one actionable sentence; detail
 * goes to the log.
 */
export class ExecuteCodeTool implements vscode.LanguageModelTool<unknown> {
  constructor(
    private readonly host: WindowHost,
    /** Used when a call comes from outside a chat (no session in the token). */
    private readonly windowKey: string,
    /** The image the sandbox runs now (a Dev Container build's tag), when known. */
    private readonly currentImage: () => string | undefined = () => undefined,
    /** Whether the sandbox image is being built now, or this call would start its build (the call will wait for it). */
    private readonly building: () => boolean | Promise<boolean> = () => false,
    /** A call's run is stored: the view shows it. */
    private readonly stored: (run: { chat: string; runId: string }) => void = () => {},
  ) {}

  /** The view's "Go Back to This Run's State": the chat's next call starts from the state after `runId`. */
  goBackTo(sessionDigest: string, runId: string): void {
    this.host.goBackTo(sessionDigest, runId);
  }

  sessionKeyOf(token: unknown): string {
    return sessionKeyFromToken(token) ?? this.windowKey;
  }

  async prepareInvocation(options: vscode.LanguageModelToolInvocationPrepareOptions<unknown>): Promise<vscode.PreparedToolInvocation> {
    const { host } = this;
    // prepareInvocation gets no token; the chat session arrives as chatSessionResource (newer builds).
    const key = sessionKeyFromToken(options as unknown) ?? this.windowKey;
    const call = await prepareCall(options.input, key, {
      settings: host.settings.read(),
      image: this.currentImage(),
      building: await this.building(),
      personChose: (chat) => host.goingBack.get(chat),
      readToken: (token) => host.store.readStartToken(token),
      runLabel: ({ run }) => new Date(runTime(run)).toLocaleString(),
      stateRuns: (chat) => host.store.stateRuns(chat),
      holdsState: holdsState(host.provider, host.states),
    });
    // The chat is about to run a program: create its sandbox now, while the invocation is set up,
    // so the first call finds it warm. Not when the person is asked first: a declined run leaves
    // nothing running.
    if (call.prewarm) host.provider.prewarm?.(key);
    const prepared: vscode.PreparedToolInvocation = { invocationMessage: plainMarkdown(call.message) };
    if (call.question) prepared.confirmationMessages = { title: 'Run Python in the sandbox?', message: plainMarkdown(call.question) };
    return prepared;
  }

  async invoke(
    options: vscode.LanguageModelToolInvocationOptions<unknown>,
    token: vscode.CancellationToken,
  ): Promise<vscode.LanguageModelToolResult> {
    let input: ToolInput;
    try {
      input = parseToolInput(options.input);
    } catch (e) {
      throw this.toModelError(e);
    }
    const abort = new AbortController();
    const subscription = token.onCancellationRequested(() => abort.abort());
    if (token.isCancellationRequested) abort.abort();
    try {
      const result = await this.host.call({ input, sessionKey: this.sessionKeyOf(options.toolInvocationToken), signal: abort.signal });
      if (result.run) this.stored(result.run);
      if (result.report.cancelled) throw new vscode.CancellationError();
      const links = result.run ? fileLinks(result.files.map((f) => ({ name: f.name, uri: vscode.Uri.file(this.host.store.filePath(result.run!.chat, result.run!.runId, f.name)).toString() }))) : '';
      return new vscode.LanguageModelToolResult([
        new vscode.LanguageModelTextPart(links ? `${result.text}\n\n${links}` : result.text),
        // The type was decided by the host from the bytes when the file was stored.
        ...result.images.map((i) => vscode.LanguageModelDataPart.image(i.bytes, i.mimeType)),
      ]);
    } catch (e) {
      if (e instanceof vscode.CancellationError) throw e;
      if (isToolError(e) && e.code === 'cancelled') throw new vscode.CancellationError();
      throw this.toModelError(e);
    } finally {
      subscription.dispose();
    }
  }

  private toModelError(e: unknown): Error {
    if (isToolError(e)) return new Error(e.modelMessage);
    this.host.log.error(`execute_code: ${describeError(e)}`);
    return new Error(new ToolError('sandbox_failed', 'The sandbox failed unexpectedly.', { seeLog: true }).modelMessage);
  }
}

