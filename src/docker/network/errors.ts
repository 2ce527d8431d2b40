import { ToolError } from '../../core/errors';

/** The sandbox's network (its internal network or proxy) could not be had; the program did not run. */
export class NetworkUnavailableError extends ToolError {
  constructor(detail: string, options?: { cause?: unknown }) {
    super(
      'sandbox_failed',
      `The sandbox's network proxy could not be started (${detail}), so the program was not run. The next call tries again; if it fails again, ask the user to look at the CodeAct Sandbox log or to empty the network allow-list.`,
      options,
    );
    this.name = 'NetworkUnavailableError';
  }
}
