import * as path from 'node:path';
import * as vscode from 'vscode';
import { ToolError, describeError, isToolError } from '../core/errors';
import { executeCode } from '../core/executeCode';
import type { Logger } from '../core/logger';
import type { SandboxProvider } from '../core/sandbox';
import { sessionDisplayName, sessionKeyFromToken, sessionDigest } from '../core/session';
import { runLimitsOf } from '../core/settings';
import { parseToolInput, type ToolInput } from '../core/toolInput';
import type { SettingsReader } from './config';

/**
 * The execute_code language-model tool: validates its own input, keys the sandbox by the chat
 * session from the invocation token (never by anything the model says), runs the pipeline and
 * returns the text. Failures reach the model as one actionable sentence; detail goes to the log.
 */
export class ExecuteCodeTool implements vscode.LanguageModelTool<unknown> {
  constructor(
    private readonly provider: SandboxProvider,
    private readonly settings: SettingsReader,
    private readonly log: Logger,
    /** Used when a call comes from outside a chat (no session in the token). */
    private readonly windowKey: string,
    private readonly spillRoot: string,
  ) {}

  sessionKeyOf(token: unknown): string {
    return sessionKeyFromToken(token) ?? this.windowKey;
  }

  prepareInvocation(
    options: vscode.LanguageModelToolInvocationPrepareOptions<unknown>,
  ): vscode.PreparedToolInvocation {
    const s = this.settings.read();
    // prepareInvocation gets no token; the chat session arrives as chatSessionResource (newer builds).
    const key = sessionKeyFromToken(options as unknown) ?? this.windowKey;
    const where = `sandbox \`${s.image}\`, ${sessionDisplayName(key)}`;
    const code = typeof (options.input as { code?: unknown })?.code === 'string' ? (options.input as ToolInput).code : '';
    const prepared: vscode.PreparedToolInvocation = {
      invocationMessage: `Running Python in the ${where}`,
    };
    if (s.confirmBeforeRun) {
      const preview = code.length > 4000 ? `${code.slice(0, 4000)}\n# ... (${code.length - 4000} more characters)` : code;
      prepared.confirmationMessages = {
        title: 'Run Python in the sandbox?',
        message: new vscode.MarkdownString(
          `The program runs in the ${where}: no network, no access to your files.\n\n\`\`\`python\n${preview}\n\`\`\``,
        ),
      };
    }
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
    try {
      const runId = `${new Date().toISOString().replace(/[:.]/g, '-')}-${Math.random().toString(16).slice(2, 8)}`;
      const report = await executeCode(
        this.provider,
        this.log,
        {
          code: input.code,
          sessionKey,
          memoryMb: settings.memoryMb,
          spillDir: path.join(this.spillRoot, sessionDigest(sessionKey), runId),
        },
        runLimitsOf(settings),
        abort.signal,
      );
      if (report.stdoutFile || report.stderrFile) {
        this.log.info(`full output of the run kept in ${[report.stdoutFile, report.stderrFile].filter(Boolean).join(' and ')}`);
      }
      if (report.cancelled) throw new vscode.CancellationError();
      return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(report.text)]);
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
    this.log.error(`execute_code: ${describeError(e)}`);
    return new Error(
      new ToolError('sandbox_failed', 'The sandbox failed unexpectedly. Ask the user to check the "CodeAct Sandbox" output channel.').modelMessage,
    );
  }
}
