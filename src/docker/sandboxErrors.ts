import { ToolError, describeError } from '../core/errors';
import { engineUnreachable, isUnreachable } from './engineErrors';

/** Why a sandbox could not be made, for the model: creation failures and engine errors while re-attaching. */
export const SANDBOX_FAILED = 'The sandbox could not be created. Ask the user to check the "CodeAct Sandbox" output channel.';

export function translateEngine(e: unknown): Error {
  if (e instanceof ToolError) return e;
  if (isUnreachable(e)) return engineUnreachable(e);
  return new ToolError('sandbox_failed', SANDBOX_FAILED, { cause: e });
}

/**
 * Why creating a sandbox failed, for the model. An image without python3 is told apart by the
 * runtime's "executable file not found" text: the engine reports it with a generic status only.
 */
export function createFailure(e: unknown, image: string): ToolError {
  if (e instanceof ToolError) return e;
  if (isUnreachable(e)) return engineUnreachable(e);
  if (/executable file not found|no such file or directory/i.test(describeError(e))) {
    return new ToolError('image_unavailable', `The sandbox image "${image}" has no python3 on its PATH. Ask the user to choose an image with Python 3.`, {
      cause: e,
    });
  }
  return new ToolError('sandbox_failed', SANDBOX_FAILED, { cause: e });
}

