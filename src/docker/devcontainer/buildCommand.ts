/**
 * The Dev Containers CLI's `build` as data (its argv and environment) and what its output means:
 * progress lines, the log tail kept for the error, and the JSON outcome it prints last. The
 * process itself is the ProcessHost's; this file never spawns.
 */
import * as path from 'node:path';
import { z } from 'zod';
import { describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { cancelled, dockerCliMissing } from './buildErrors';
import type { OutputStream, ProcessCommand, ProcessExit, ProcessHost } from './processHost';

/** Lines of build output kept for the error's cause (the full output goes to the log). */
export const LOG_TAIL_LINES = 60;
/** `docker --version` answers at once; a docker CLI that hangs is as good as none. */
const DOCKER_CHECK_TIMEOUT_MS = 15_000;

export interface BuildCommandInput {
  /** The Node that runs the CLI's script (process.execPath: in VS Code, Electron's). */
  node: string;
  script: string;
  workspaceFolder: string;
  configFile: string;
  imageName: string;
  dockerPath: string;
  noCache: boolean;
  /** The docker CLI's environment for the engine (DOCKER_HOST, DOCKER_CERT_PATH, ...). */
  env: NodeJS.ProcessEnv;
}

export function devcontainerBuildCommand(i: BuildCommandInput): ProcessCommand {
  return {
    file: i.node,
    args: [
      i.script,
      'build',
      '--workspace-folder', path.resolve(i.workspaceFolder),
      '--config', i.configFile,
      '--image-name', i.imageName,
      '--docker-path', i.dockerPath,
      // Never write a lockfile into the user's workspace.
      '--no-lockfile',
      '--log-format', 'text',
      ...(i.noCache ? ['--no-cache'] : []),
    ],
    env: cliEnv(i.env),
  };
}

export function dockerVersionCommand(dockerPath: string, env: NodeJS.ProcessEnv): ProcessCommand {
  return { file: dockerPath, args: ['--version'], env: cliEnv(env) };
}

/** Electron (VS Code's process.execPath) runs a script as plain Node only with this set. */
function cliEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...env, ELECTRON_RUN_AS_NODE: '1' };
}

/** The JSON line the CLI ends with; a field of an unexpected type reads as absent. */
const CliOutcome = z.object({
  outcome: z.string().optional().catch(undefined),
  message: z.string().optional().catch(undefined),
  description: z.string().optional().catch(undefined),
});
type CliOutcome = z.infer<typeof CliOutcome>;

export interface CliResult {
  outcome: 'success' | 'error' | 'timeout' | 'cancelled';
  detail?: string;
  /** The last LOG_TAIL_LINES lines of output, ANSI colours removed. */
  tail: string[];
}

/** Reads the CLI's output line by line: to the log, progress to the caller, the outcome kept. */
export class BuildOutput {
  readonly tail: string[] = [];
  private outcome: CliOutcome | undefined;

  constructor(private readonly o: { log: Logger; onProgress?: ((message: string) => void) | undefined }) {}

  readonly line = (text: string, stream: OutputStream): void => {
    const clean = text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').trimEnd();
    if (!clean) return;
    if (stream === 'stdout' && clean.startsWith('{')) {
      const json = parseJson(clean);
      if (json !== undefined) {
        this.outcome = CliOutcome.parse(json);
        return;
      }
    }
    this.o.log.info(`devcontainer build: ${clean}`);
    this.tail.push(clean);
    if (this.tail.length > LOG_TAIL_LINES) this.tail.shift();
    const step = /(Step \d+\/\d+ : .*|#\d+ \[.*)$/.exec(clean)?.[1];
    if (step) this.o.onProgress?.(step.slice(0, 120));
  };

  /** What the run came to, once the process has exited. */
  result(exit: ProcessExit): CliResult {
    if (exit.error !== undefined) return { outcome: exit.stopped ?? 'error', detail: describeError(exit.error), tail: this.tail };
    if (exit.stopped) return { outcome: exit.stopped, tail: this.tail };
    if (exit.code === 0 && this.outcome?.outcome === 'success') return { outcome: 'success', tail: this.tail };
    const detail = [this.outcome?.message, this.outcome?.description].filter(Boolean).join(': ') || `exit ${exit.code ?? exit.signal}`;
    if (this.outcome?.message) {
      this.tail.push(detail);
      this.o.log.info(`devcontainer build: ${detail}`);
    }
    return { outcome: 'error', detail, tail: this.tail };
  }
}

/** Runs `devcontainer build` on `host`, its output streaming to the log. */
export async function runDevcontainerBuild(
  host: ProcessHost,
  command: ProcessCommand,
  o: { log: Logger; signal: AbortSignal | undefined; timeoutMs: number; onProgress: ((message: string) => void) | undefined },
): Promise<CliResult> {
  const output = new BuildOutput({ log: o.log, onProgress: o.onProgress });
  const exit = await host.run(command, {
    ...(o.signal ? { signal: o.signal } : {}),
    timeoutMs: o.timeoutMs,
    onLine: output.line,
    onStop: (why) => o.log.warn(`stopping the Dev Container build (${why})`),
  });
  return output.result(exit);
}

/** Throws a model-facing ToolError unless `docker --version` works (the CLI needs that docker). */
export async function checkDockerCli(host: ProcessHost, dockerPath: string, env: NodeJS.ProcessEnv, signal: AbortSignal | undefined): Promise<void> {
  const exit = await host.run(dockerVersionCommand(dockerPath, env), { ...(signal ? { signal } : {}), timeoutMs: DOCKER_CHECK_TIMEOUT_MS });
  if (signal?.aborted) throw cancelled();
  if (exit.error !== undefined || exit.stopped || exit.code !== 0) throw dockerCliMissing();
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
