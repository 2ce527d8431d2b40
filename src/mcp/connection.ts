import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describeError } from '../core/errors';
import type { WorkspaceSource } from '../core/files/filesIn';
import { DEFAULTS } from '../core/limits';
import { SessionStates } from '../core/state';
import { executeToolCall } from '../core/toolCall';
import { rehearseCallPath } from '../core/rehearsal';
import { parseToolInput } from '../core/toolInput';
import type { DockerSandboxProvider, Owner } from '../docker';
import { pruneAfterCall, type ArtifactStore } from '../storage/artifactStore';
import { readImageAttachments } from '../storage/imageAttachments';
import { RunRecording } from '../storage/runRecorder';
import { folderSource } from '../storage/workspaceFolder';
import { foldersSource, type NamedFolder } from '../storage/workspaceFolders';
import { createSandboxProvider, toolCallOptions, type SandboxConfig } from '../standalone/pipeline';
import { rehearseProtocol } from './server';
import { chatKeyOf } from './chatKey';
import type { CallMeta } from './server';
import { failureResult, successResult } from './toolResult';

const MB = 1024 * 1024;

export interface McpConfig extends SandboxConfig {
  /** --workspace: the file store whatever the client's roots say. */
  workspace: string | undefined;
  idleMinutes: number;
}

export interface ConnectionParts {
  owner: Owner;
  /** This connection's own key: one sandbox per connection, never shared with another. */
  sessionKey: string;
  store: ArtifactStore;
  /** The client's roots as folders (empty when it offers none). */
  roots: { folders(): Promise<NamedFolder[]>; readonly known: readonly NamedFolder[] };
}

/**
 * One client connection: its sandbox (created by the first call, removed by `close`), its file
 * store and its runs. Every call goes through the same pipeline as in VS Code and comes back as
 * the same text; a failure of the tool itself is a result marked `isError`.
 */
export class McpConnection {
  readonly provider: DockerSandboxProvider;
  private readonly closing = new AbortController();
  private readonly running = new Set<Promise<unknown>>();
  private readonly fixedWorkspace: WorkspaceSource | undefined;
  /** The connection's session state, when --state session (a lost one is reported). */
  private readonly states = new SessionStates();

  constructor(
    private readonly config: McpConfig,
    private readonly parts: ConnectionParts,
  ) {
    this.fixedWorkspace = config.workspace === undefined ? undefined : folderSource(config.workspace);
    this.provider = createSandboxProvider(config, {
      owner: parts.owner,
      workspaceFolder: () => config.workspace ?? parts.roots.known[0]?.path,
      idleMs: config.idleMinutes * 60_000,
      adoptExisting: false,
      buildLogHint: "the CodeAct Sandbox server's log (its standard error; all of it with --verbose)",
    });
  }

  /**
   * Makes the connection's sandbox now, ahead of its first call, as VS Code does when a chat is
   * about to call: the first call then finds it started and its runner warming (or warm). Only an
   * image already on the engine is used; nothing is asked, built or pulled. The run store's
   * index is read now too (a walk of its folders, the first use of its records' schema), which
   * the first call would otherwise pay after its program ran (its record, the prune), and the
   * call's host path and the SDK's checks of a call are taken once on made-up values
   * (rehearseCallPath, rehearseProtocol).
   */
  prewarm(): void {
    this.provider.prewarm(this.parts.sessionKey);
    rehearseCallPath();
    rehearseProtocol();
    this.parts.store.totalBytes().catch((e: unknown) => this.config.log.warn(`the run store could not be read ahead of the first call: ${describeError(e)}`));
  }

  /**
   * One call. A host that names the chat it comes from (VS Code's `vscode.conversationId`) gets a
   * sandbox and a state per chat, under this connection's key: one server serves all of a window's
   * chats, which must not share a sandbox.
   */
  call(args: unknown, signal: AbortSignal, meta?: CallMeta): Promise<CallToolResult> {
    const chat = chatKeyOf(meta);
    const call = this.run(args, AbortSignal.any([signal, this.closing.signal]), chat ? `${this.parts.sessionKey}|${chat}` : this.parts.sessionKey);
    this.running.add(call);
    return call.finally(() => this.running.delete(call));
  }

  private async run(args: unknown, signal: AbortSignal, sessionKey: string): Promise<CallToolResult> {
    const { config, parts } = this;
    const recording = new RunRecording(parts.store, sessionKey);
    try {
      const input = parseToolInput(args);
      const workspace = this.fixedWorkspace ?? foldersSource(await parts.roots.folders());
      // Begun before the run so the result can name the folder the files land in.
      const filesDir = recording.writer.filesDir;
      const { report, files } = await executeToolCall(
        this.provider,
        config.log,
        input,
        toolCallOptions(config, { sessionKey, workspace, recording, savedWhere: `in ${filesDir}`, states: this.states }),
        signal,
      );
      const pruned = await pruneAfterCall(parts.store, {
        budgetBytes: DEFAULTS.artifactsBudgetMb * MB,
        sessionKey,
        run: { runId: recording.writer.runId, savedFiles: files.length },
        states: this.states,
      });
      if (pruned.log) config.log.info(pruned.log);
      const images = DEFAULTS.attachImages && !pruned.runDeleted ? readImageAttachments(filesDir, files, DEFAULTS.attachImageMaxKb * 1024, config.log) : [];
      return successResult(pruned.model ? `${report.text}\n\n${pruned.model}` : report.text, images);
    } catch (e) {
      return failureResult(e, config.log);
    } finally {
      // A call refused before it ran leaves no run behind; a finished run is kept (no-op).
      recording.begun?.discard();
    }
  }

  /** Stops running programs, then removes the connection's sandbox. */
  async close(): Promise<void> {
    this.closing.abort();
    // A stopped program returns within moments; a client that kills its server after ~2 s
    // (the SDK's does) must not catch it with the sandbox still there.
    await Promise.race([Promise.allSettled([...this.running]), new Promise((resolve) => setTimeout(resolve, 1500).unref())]);
    await this.provider.dispose();
  }
}
