import { ToolError, describeError } from '../core/errors';
import { USAGE, UsageError } from './options';

/**
 * Says on stderr why a command failed and returns its exit code (2: bad arguments, 1: the tool
 * failed). Each of the command line's two bundles has its own copy of this module and of the
 * error classes it knows, so each reports the errors its own code throws.
 */
export function reportFailure(e: unknown): number {
  if (e instanceof UsageError) {
    process.stderr.write(`codeact-sandbox: ${e.message}\n\n${USAGE}`);
    return 2;
  }
  if (e instanceof ToolError) {
    process.stderr.write(`${e.messageFor('cli')}\n`);
    // A failed build's cause holds the tail of its output: the CLI's user needs it.
    if (e.code === 'build_failed' && e.cause instanceof Error) process.stderr.write(`${e.cause.message}\n`);
    if (process.env.CODEACT_DEBUG) process.stderr.write(`${describeError(e)}\n`);
    return e.code === 'invalid_input' || e.code === 'invalid_settings' ? 2 : 1;
  }
  process.stderr.write(`codeact-sandbox: ${describeError(e)}\n`);
  return 1;
}
