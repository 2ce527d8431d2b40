import { ToolError, type ToolErrorCode } from '../../core/errors';

/**
 * An image that could not be had. Besides the model's sentence it carries one for the user (a
 * notification: what to do), since only the user can fix what a build needs.
 */
export class ImageBuildError extends ToolError {
  constructor(
    code: ToolErrorCode,
    modelMessage: string,
    readonly userMessage: string,
    options?: { cause?: unknown },
  ) {
    super(code, modelMessage, options);
    this.name = 'ImageBuildError';
  }
}

/** pip refused one of the user's packages; `requirement` is the entry as the user wrote it. */
export class RequirementRejectedError extends ImageBuildError {
  constructor(
    readonly requirement: string,
    modelMessage: string,
    userMessage: string,
    options?: { cause?: unknown },
  ) {
    super('build_failed', modelMessage, userMessage, options);
    this.name = 'RequirementRejectedError';
  }
}
