/**
 * Errors that cross a layer carry three things: a stable `code` for callers and tests, a
 * `modelMessage` written for the language model (what happened and what to do next, with no
 * transport detail), and the underlying `cause` for the log only.
 */
export type ToolErrorCode =
  | 'invalid_input'
  | 'invalid_settings'
  | 'engine_unreachable'
  /** The engine was reached but did not answer in time (busy or stuck). */
  | 'engine_busy'
  | 'image_unavailable'
  /** The sandbox image had to be built (Dev Container backend) and the build failed. */
  | 'build_failed'
  | 'sandbox_failed'
  | 'cancelled';

/** Which client reads the sentence: each keeps the details somewhere else. */
export type Client = 'vscode' | 'cli' | 'mcp';

/** Where a client's user finds what the model is not told (the engine's own words, tracebacks of the tool). */
export const SEE_LOG: Record<Client, string> = {
  vscode: 'Ask the user to check the "CodeAct Sandbox" output channel.',
  cli: 'Run the command again with --verbose to see the details.',
  mcp: "Ask the user to check the CodeAct Sandbox server's log (its standard error).",
};

export class ToolError extends Error {
  /** True when the sentence ends by pointing at the log, which each client names its own way. */
  readonly seeLog: boolean;

  constructor(
    readonly code: ToolErrorCode,
    /** The sentence without the pointer to the log. */
    private readonly text: string,
    options?: { cause?: unknown; seeLog?: boolean },
  ) {
    super(options?.seeLog ? `${text} ${SEE_LOG.vscode}` : text, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = 'ToolError';
    this.seeLog = options?.seeLog === true;
  }

  /** The sentence for the model as VS Code shows it. */
  get modelMessage(): string {
    return this.messageFor('vscode');
  }

  /** The sentence for the model, naming the log of the client that shows it. */
  messageFor(client: Client): string {
    return this.seeLog ? `${this.text} ${SEE_LOG[client]}` : this.text;
  }
}

export function isToolError(e: unknown): e is ToolError {
  return e instanceof ToolError;
}

/** One line of detail for the log, including a chain of causes; never shown to the model. */
export function describeError(e: unknown): string {
  const parts: string[] = [];
  let current: unknown = e;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    if (current instanceof Error) {
      const code = (current as { code?: unknown }).code;
      const status = (current as { statusCode?: unknown }).statusCode;
      const extra = [code, status].filter((x) => x !== undefined).join(' ');
      parts.push(`${current.name}${extra ? ` (${extra})` : ''}: ${current.message}`);
      current = (current as { cause?: unknown }).cause;
    } else {
      parts.push(String(current));
      break;
    }
  }
  return parts.join(' <- ');
}
