/** What the model is told when the Dev Container image cannot be had, one sentence per cause. */
import { ToolError } from '../../core/errors';
import type { CliResult } from './buildCommand';

/**
 * The CLI reports a failed pull or download only as text (the builder's, apt's or its own Feature
 * download's), with no code to read, so these phrases are what there is to go on.
 */
const NETWORK_FAILURE =
  /ENOTFOUND|EAI_AGAIN|getaddrinfo|ECONNREFUSED|ETIMEDOUT|network is unreachable|no such host|dial tcp|TLS handshake timeout|failed to (fetch|resolve|download)|pull access denied|manifest unknown|Temporary failure resolving|Could not resolve/i;

export function cancelled(): ToolError {
  return new ToolError('cancelled', 'The Dev Container image build was cancelled, so the program was not run.');
}

export function dockerCliMissing(): ToolError {
  return new ToolError(
    'build_failed',
    'The Dev Container image could not be built because the docker command-line tool was not found on the machine where the extension runs (the Dev Containers CLI needs it). Ask the user to install it (it comes with Docker Desktop and Docker Engine) and put it on the PATH the editor sees, or to switch the sandbox backend to docker.',
  );
}

/**
 * The error for a build that ended in 'error' or 'timeout'; its cause (for the log) carries the
 * CLI's last lines of output.
 */
export function buildFailed(result: CliResult, o: { relativeConfigFile: string; timeoutMs: number; logHint: string }): ToolError {
  const tail = result.tail.join('\n');
  const cause = new Error(`devcontainer build ${result.outcome}${result.detail ? `: ${result.detail}` : ''}\n${tail}`);
  if (result.outcome === 'timeout') {
    return new ToolError(
      'build_failed',
      `The Dev Container image build did not finish within ${Math.round(o.timeoutMs / 60_000)} minutes and was stopped, so the program was not run; the build log is in ${o.logHint}. Ask the user to check ${o.relativeConfigFile} and its Dockerfile, or to switch the sandbox backend to docker.`,
      { cause },
    );
  }
  const network = NETWORK_FAILURE.test(`${result.detail ?? ''}\n${tail}`);
  return new ToolError(
    'build_failed',
    `The Dev Container image could not be built, so the program was not run; the build log is in ${o.logHint}.${
      network ? ' The build needed network access (a base image, a Dev Container Feature or a package download) and could not get it.' : ''
    } Ask the user to fix ${o.relativeConfigFile} (or its Dockerfile) and rebuild, or to switch the sandbox backend to docker.`,
    { cause },
  );
}

export function tagFailed(cause: unknown, logHint: string): ToolError {
  return new ToolError('build_failed', `The Dev Container image was built but could not be tagged, so the program was not run; details are in ${logHint}.`, { cause });
}
