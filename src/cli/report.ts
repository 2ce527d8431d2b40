import { ToolError, describeError } from '../core/errors';
import { USAGE, UsageError } from './options';

/** Where a command writes: this process's standard output and error, or a keeper's caller's (keeper.ts). */
export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
}

export const processOutput: CliOutput = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

/**
 * Says on stderr why a command failed and returns its exit code (2: bad arguments, 1: the tool
 * failed). Each of the command line's two bundles has its own copy of this module and of the
 * error classes it knows, so each reports the errors its own code throws.
 */
export function reportFailure(e: unknown, output: CliOutput = processOutput): number {
  if (e instanceof UsageError) {
    output.err(`codeact-sandbox: ${e.message}\n\n${USAGE}`);
    return 2;
  }
  if (e instanceof ToolError) {
    output.err(`${e.messageFor('cli')}\n`);
    // A failed build's cause holds the tail of its output: the CLI's user needs it.
    if (e.code === 'build_failed' && e.cause instanceof Error) output.err(`${e.cause.message}\n`);
    if (process.env.CODEACT_DEBUG) output.err(`${describeError(e)}\n`);
    return e.code === 'invalid_input' || e.code === 'invalid_settings' ? 2 : 1;
  }
  output.err(`codeact-sandbox: ${describeError(e)}\n`);
  return 1;
}
