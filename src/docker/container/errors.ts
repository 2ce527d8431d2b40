import { ToolError, describeError } from '../../core/errors';
import type Dockerode from 'dockerode';
import { engineFailure, isEngineFailure } from '../engine';

/** Why a sandbox could not be made, for the model (creation failures and engine errors while re-attaching); each client adds where its log is. */
export function sandboxFailed(cause?: unknown): ToolError {
  return new ToolError('sandbox_failed', 'The sandbox could not be created.', { cause, seeLog: true });
}

export function translateEngine(e: unknown, docker?: Dockerode): Error {
  if (e instanceof ToolError) return e;
  if (isEngineFailure(e)) return engineFailure(e, docker);
  return sandboxFailed(e);
}

/**
 * Why creating a sandbox failed, for the model. An image without python3 is told apart by the
 * runtime's "executable file not found" text: the engine reports it with a generic status only.
 */
export function createFailure(e: unknown, image: string, docker?: Dockerode): ToolError {
  if (e instanceof ToolError) return e;
  if (isEngineFailure(e)) return engineFailure(e, docker);
  if (/executable file not found|no such file or directory/i.test(describeError(e))) {
    return new ToolError('image_unavailable', `The sandbox image "${image}" has no python3 on its PATH. Ask the user to choose an image with Python 3.`, {
      cause: e,
    });
  }
  return sandboxFailed(e);
}

