import type { Logger } from '../core/logger';
import type { CollectedFile, SandboxProvider } from '../core/sandbox';
import { sessionDigest } from '../core/session';
import { filesInCapsOf, filesOutCapsOf, runLimitsOf } from '../core/settings';
import { SessionStates } from '../core/state';
import { executeToolCall, type ToolCallOptions } from '../core/toolCall';
import type { ExecuteReport } from '../core/executeCode';
import type { ToolInput } from '../core/toolInput';
import { pruneAfterCall, type ArtifactStore } from '../storage/artifactStore';
import { readImageAttachments, type ImageAttachment } from '../storage/imageAttachments';
import { RunRecording } from '../storage/runRecorder';
import { otherChats } from '../storage/startTokens';
import type { SettingsReader } from './config';
import { workspaceSource } from './workspaceFiles';

/** One call through the window's host, from the language-model tool or the chat card's MCP door. */
export interface WindowCall {
  input: ToolInput;
  /** The chat's key (from the host's context, never from the model). */
  sessionKey: string;
  signal: AbortSignal;
  /** The program's output as it comes (the card's live view). */
  onOutput?: ToolCallOptions['onOutput'];
}

export interface WindowCallResult {
  report: ExecuteReport;
  /** What the model reads: the call's text, and what the storage budget did to this chat. */
  text: string;
  files: CollectedFile[];
  /** The run's record in the store, when it was kept (its files are in `filesDir`). */
  run?: { chat: string; runId: string; filesDir: string };
  /** The images the model may look at (when the person lets it). */
  images: ImageAttachment[];
}

/**
 * The window's one host for a call: the sandboxes, the run store, the chats' states and the
 * person's choices in the view, shared by the language-model tool and the MCP door the chat's run
 * card comes through. Both give the same input the same result (a test says so); each only
 * translates it for its side. No `vscode` here: the settings come through a reader, the workspace
 * through `workspaceSource`.
 */
export class WindowHost {
  /** The state each chat's last call left (state setting `session`): a lost one is reported. */
  readonly states = new SessionStates();
  /** Runs the person chose to go back to (the view), by chat digest: taken by the chat's next call. */
  readonly goingBack = new Map<string, string>();
  /** A `startFrom` token's chat and run (the view's "Start a New Chat from Here"), and that chat's runs. */
  private readonly otherChats: ReturnType<typeof otherChats>;

  constructor(
    readonly provider: SandboxProvider,
    readonly settings: SettingsReader,
    readonly log: Logger,
    readonly store: ArtifactStore,
  ) {
    this.otherChats = otherChats(store);
  }

  /** The view's "Go Back to This Run's State": the chat's next call starts from the state after `runId`. */
  goBackTo(sessionDigest: string, runId: string): void {
    this.goingBack.set(sessionDigest, runId);
  }

  async call(c: WindowCall): Promise<WindowCallResult> {
    const { input, sessionKey } = c;
    const settings = this.settings.read();
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
          ...(c.onOutput ? { onOutput: c.onOutput } : {}),
        },
        c.signal,
      );
      ran = true;
      const pruned = await pruneAfterCall(this.store, {
        budgetBytes: settings.artifactsBudgetMb * 1024 * 1024,
        sessionKey,
        ...(recording.begun ? { run: { runId: recording.begun.runId, savedFiles: files.length } } : {}),
        states: this.states,
      });
      if (pruned.log) this.log.info(pruned.log);
      const begun = recording.begun && !pruned.runDeleted ? recording.begun : undefined;
      return {
        report,
        text: pruned.model ? `${report.text}\n\n${pruned.model}` : report.text,
        files,
        ...(begun ? { run: { chat: begun.sessionDigest, runId: begun.runId, filesDir: begun.filesDir } } : {}),
        images: settings.attachImages && begun ? readImageAttachments(begun.filesDir, files, settings.attachImageMaxKb * 1024, this.log) : [],
      };
    } finally {
      // Taken by this call, done or refused (a retry runs on the current state); a newer choice
      // stays, and so does one the model's refused reset, rewind or startFrom never set aside.
      if (rewindTo && (ran || !modelChose) && this.goingBack.get(digest) === rewindTo) this.goingBack.delete(digest);
    }
  }
}
