/**
 * Errors that cross a layer carry three things: a stable `code` for callers and tests, a
 * `modelMessage` written for the language model (what happened and what to do next, with no
 * transport detail), and the underlying `cause` for the log only.
 */
export type ToolErrorCode =
  | 'invalid_input'
  | 'invalid_settings'
  | 'engine_unreachable'
  | 'image_unavailable'
  /** The sandbox image had to be built (Dev Container backend) and the build failed. */
  | 'build_failed'
  | 'sandbox_failed'
  | 'cancelled';

export class ToolError extends Error {
  constructor(
    readonly code: ToolErrorCode,
    readonly modelMessage: string,
    options?: { cause?: unknown },
  ) {
    super(modelMessage, options);
    this.name = 'ToolError';
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
