import type { Logger } from '../core/logger';
import type { CollectedFile, SandboxProvider } from '../core/sandbox';
import { sessionDigest } from '../core/session';
import { filesInCapsOf, filesOutCapsOf, runLimitsOf } from '../core/settings';
import { REFUSED, SessionStates, startQuestion, stateChain } from '../core/state';
import { ToolError } from '../core/errors';
import { executeToolCall, type ToolCallOptions } from '../core/toolCall';
import type { ExecuteReport } from '../core/executeCode';
import type { ToolInput } from '../core/toolInput';
import { pruneAfterCall, type ArtifactStore } from '../storage/artifactStore';
import { readImageAttachments, type ImageAttachment } from '../storage/imageAttachments';
import { RunRecording } from '../storage/runRecorder';
import { otherChats } from '../storage/startTokens';
import { runTime } from '../storage/storeIndex';
import type { SettingsReader } from './config';
import { workspaceSource } from './workspaceFiles';

/** The button that lets another chat's state come in (the dialog's other choice is Cancel). */
export const START_ANSWER = 'Start from It';

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
    /**
     * Asks the person (a dialog of the window's): true when they agree. Another chat's state comes
     * into a chat only so: the project asks itself, whichever door the call came through, since
     * VS Code's own question before a tool can be approved away (Allow in this Session, Always
     * Allow, Bypass Approvals, Autopilot) and an MCP tool's does not say what the call does.
     */
    private readonly confirm: (question: string) => Promise<boolean>,
  ) {
    this.otherChats = otherChats(store);
  }

  /** A `startFrom` call is asked first: refused with a sentence when the person says no. */
  private async askStart(input: ToolInput): Promise<void> {
    if (input.startFrom === undefined || this.settings.read().state !== 'session') return;
    const reading = this.store.readStartToken(input.startFrom);
    // A token this store will not take is refused by the call itself, with its own sentence.
    if (!('origin' in reading)) return;
    let runs: number | undefined;
    try {
      const theirs = await this.store.stateRuns(reading.origin.chat);
      const at = theirs.findIndex((r) => r.runId === reading.origin.run);
      const chain = at < 0 ? undefined : stateChain(theirs.slice(0, at + 1));
      runs = chain?.kind === 'ok' ? chain.runs.length : chain?.kind === 'none' ? 0 : undefined;
    } catch {
      // The records could not be read: the question leaves the count out, the call says why.
    }
    if (!(await this.confirm(startQuestion(new Date(runTime(reading.origin.run)).toLocaleString(), runs)))) {
      throw new ToolError('invalid_input', REFUSED.startDeclined);
    }
  }

  /** The view's "Go Back to This Run's State": the chat's next call starts from the state after `runId`. */
  goBackTo(sessionDigest: string, runId: string): void {
    this.goingBack.set(sessionDigest, runId);
  }

  async call(c: WindowCall): Promise<WindowCallResult> {
    const { input, sessionKey } = c;
    await this.askStart(input);
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
