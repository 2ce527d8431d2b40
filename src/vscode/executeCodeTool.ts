import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { ToolError, describeError, isToolError } from '../core/errors';
import type { Logger } from '../core/logger';
import type { CollectedFile, SandboxProvider } from '../core/sandbox';
import { sessionDigest, sessionKeyFromToken } from '../core/session';
import { filesInCapsOf, filesOutCapsOf, runLimitsOf } from '../core/settings';
import { SessionStates } from '../core/state';
import { executeToolCall } from '../core/toolCall';
import { pruneAfterCall, type ArtifactStore } from '../storage/artifactStore';
import { RunRecording } from '../storage/runRecorder';
import { otherChats } from '../storage/startTokens';
import { runTime } from '../storage/storeIndex';
import { parseToolInput, type ToolInput } from '../core/toolInput';
import type { SettingsReader } from './config';
import { holdsState, prepareCall } from './prepareCall';
import { plainMarkdown } from './vscodeUi';
import { workspaceSource } from './workspaceFiles';

/**
 * The execute_code language-model tool: validates its own input, keys the sandbox by the chat
 * session from the invocation token (never by anything the model says), runs the pipeline and
 * returns the text. Failures reach the model as one actionable sentence; detail goes to the log.
 */
export class ExecuteCodeTool implements vscode.LanguageModelTool<unknown> {
  /** The state each chat's last call left (state setting `session`): a lost one is reported. */
  private readonly states = new SessionStates();
  /** Runs the person chose to go back to (the view), by chat digest: taken by the chat's next call. */
  private readonly goingBack = new Map<string, string>();
  /** A `startFrom` token's chat and run (the view's "Start a New Chat from Here"), and that chat's runs. */
  private readonly otherChats: ReturnType<typeof otherChats>;

  constructor(
    private readonly provider: SandboxProvider,
    private readonly settings: SettingsReader,
    private readonly log: Logger,
    /** Used when a call comes from outside a chat (no session in the token). */
    private readonly windowKey: string,
    private readonly store: ArtifactStore,
    /** The image the sandbox runs now (a Dev Container build's tag), when known. */
    private readonly currentImage: () => string | undefined = () => undefined,
    /** Whether the sandbox image is being built now, or this call would start its build (the call will wait for it). */
    private readonly building: () => boolean | Promise<boolean> = () => false,
  ) {
    this.otherChats = otherChats(store);
  }

  /** The view's "Go Back to This Run's State": the chat's next call starts from the state after `runId`. */
  goBackTo(sessionDigest: string, runId: string): void {
    this.goingBack.set(sessionDigest, runId);
  }

  sessionKeyOf(token: unknown): string {
    return sessionKeyFromToken(token) ?? this.windowKey;
  }

  async prepareInvocation(options: vscode.LanguageModelToolInvocationPrepareOptions<unknown>): Promise<vscode.PreparedToolInvocation> {
    // prepareInvocation gets no token; the chat session arrives as chatSessionResource (newer builds).
    const key = sessionKeyFromToken(options as unknown) ?? this.windowKey;
    const call = await prepareCall(options.input, key, {
      settings: this.settings.read(),
      image: this.currentImage(),
      building: await this.building(),
      personChose: (chat) => this.goingBack.get(chat),
      readToken: (token) => this.store.readStartToken(token),
      runLabel: ({ run }) => new Date(runTime(run)).toLocaleString(),
      stateRuns: (chat) => this.store.stateRuns(chat),
      holdsState: holdsState(this.provider, this.states),
    });
    // The chat is about to run a program: create its sandbox now, while the invocation is set up,
    // so the first call finds it warm. Not when the person is asked first: a declined run leaves
    // nothing running.
    if (call.prewarm) this.provider.prewarm?.(key);
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
    const settings = this.settings.read();
    const sessionKey = this.sessionKeyOf(options.toolInvocationToken);
    const abort = new AbortController();
    const subscription = token.onCancellationRequested(() => abort.abort());
    if (token.isCancellationRequested) abort.abort();
    const recording = new RunRecording(this.store, sessionKey);
    const digest = sessionDigest(sessionKey);
    const rewindTo = settings.state === 'session' ? this.goingBack.get(digest) : undefined;
    // The model's own way (reset, rewind, startFrom) sets the person's choice aside only when the call runs.
    const modelChose = input.reset === true || input.rewind !== undefined || input.startFrom !== undefined;
    let ran = false;
    try {
      const { report, files } = await executeToolCall(
        this.provider,
        this.log,
        input,
        {
          sessionKey,
          limits: runLimitsOf(settings),
          memoryMb: settings.memoryMb,
          filesIn: { source: workspaceSource(), caps: filesInCapsOf(settings) },
          filesOut: { mode: settings.outputsMode, caps: filesOutCapsOf(settings), savedWhere: 'in the CodeAct Sandbox view' },
          record: recording.record,
          ...(settings.state === 'session' ? { states: this.states, stateRuns: recording.stateRuns, otherChats: this.otherChats, ...(rewindTo ? { rewindTo } : {}) } : {}),
        },
        abort.signal,
      );
      ran = true;
      const pruned = await pruneAfterCall(this.store, {
        budgetBytes: settings.artifactsBudgetMb * 1024 * 1024,
        sessionKey,
        ...(recording.begun ? { run: { runId: recording.begun.runId, savedFiles: files.length } } : {}),
        states: this.states,
      });
      if (pruned.log) this.log.info(pruned.log);
      if (report.cancelled) throw new vscode.CancellationError();
      const parts: (vscode.LanguageModelTextPart | vscode.LanguageModelDataPart)[] = [new vscode.LanguageModelTextPart(pruned.model ? `${report.text}\n\n${pruned.model}` : report.text)];
      if (settings.attachImages && recording.begun && !pruned.runDeleted) parts.push(...this.imageParts(recording.begun.filesDir, files, settings.attachImageMaxKb * 1024));
      return new vscode.LanguageModelToolResult(parts);
    } catch (e) {
      if (e instanceof vscode.CancellationError) throw e;
      if (isToolError(e) && e.code === 'cancelled') throw new vscode.CancellationError();
      throw this.toModelError(e);
    } finally {
      subscription.dispose();
      // Taken by this call, done or refused (a retry runs on the current state); a newer choice
      // stays, and so does one the model's refused reset, rewind or startFrom never set aside.
      if (rewindTo && (ran || !modelChose) && this.goingBack.get(digest) === rewindTo) this.goingBack.delete(digest);
    }
  }

  /**
   * Images the program produced, for a multimodal model to look at. The type was decided by the
   * host from the bytes (magic numbers) when the file was stored; the program's word is not taken.
   */
  private imageParts(filesDir: string, files: readonly CollectedFile[], maxBytes: number): vscode.LanguageModelDataPart[] {
    const parts: vscode.LanguageModelDataPart[] = [];
    for (const f of files) {
      if (!f.mediaType?.startsWith('image/') || f.size > maxBytes) continue;
      try {
        const bytes = fs.readFileSync(path.join(filesDir, ...f.name.split('/')));
        parts.push(vscode.LanguageModelDataPart.image(bytes, f.mediaType));
      } catch (e) {
        this.log.warn(`could not attach ${f.name}: ${describeError(e)}`);
      }
    }
    return parts;
  }

  private toModelError(e: unknown): Error {
    if (isToolError(e)) return new Error(e.modelMessage);
    this.log.error(`execute_code: ${describeError(e)}`);
    return new Error(
      new ToolError('sandbox_failed', 'The sandbox failed unexpectedly.', { seeLog: true }).modelMessage,
    );
  }
}

