/** Running the Dev Containers CLI as a child process, and stopping its whole process tree. */
import { spawn, type ChildProcess } from 'node:child_process';
import { ToolError, describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';

/** Lines of build output kept for the error's cause (the full output goes to the log). */
const LOG_TAIL_LINES = 60;

export async function checkDockerCli(dockerPath: string, env: NodeJS.ProcessEnv, signal: AbortSignal | undefined): Promise<void> {
  const ok = await new Promise<boolean>((resolve) => {
    const child = spawn(dockerPath, ['--version'], { env, stdio: 'ignore', windowsHide: true, ...(signal ? { signal } : {}) });
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('error', () => {
      clearTimeout(timer);
      resolve(false);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code === 0);
    });
  });
  if (signal?.aborted) throw cancelled();
  if (!ok) {
    throw new ToolError(
      'build_failed',
      'The Dev Container image could not be built because the docker command-line tool was not found on the machine where the extension runs (the Dev Containers CLI needs it). Ask the user to install it or set the docker path setting, or to switch the sandbox backend to docker.',
    );
  }
}

export interface CliResult {
  outcome: 'success' | 'error' | 'timeout' | 'cancelled';
  detail?: string;
  tail: string[];
}

/** Runs the CLI (argv, no shell) in its own process group, streaming its output to the log. */
export function runCli(
  node: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  o: { log: Logger; signal: AbortSignal | undefined; timeoutMs: number; onProgress: ((m: string) => void) | undefined },
): Promise<CliResult> {
  return new Promise((resolve) => {
    const tail: string[] = [];
    let lastJson: { outcome?: string; message?: string; description?: string } | undefined;
    let ending: CliResult['outcome'] | undefined;
    let child: ChildProcess;
    try {
      child = spawn(node, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: process.platform !== 'win32', windowsHide: true });
    } catch (e) {
      resolve({ outcome: 'error', detail: describeError(e), tail });
      return;
    }
    const line = (text: string, fromStdout: boolean) => {
      const clean = text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').trimEnd();
      if (!clean) return;
      if (fromStdout && clean.startsWith('{')) {
        try {
          lastJson = JSON.parse(clean) as typeof lastJson;
          return;
        } catch {
          // an ordinary line
        }
      }
      o.log.info(`devcontainer build: ${clean}`);
      tail.push(clean);
      if (tail.length > LOG_TAIL_LINES) tail.shift();
      const step = /(Step \d+\/\d+ : .*|#\d+ \[.*)$/.exec(clean)?.[1];
      if (step) o.onProgress?.(step.slice(0, 120));
    };
    const reader = (fromStdout: boolean) => {
      let pending = '';
      return (chunk: Buffer) => {
        pending += chunk.toString('utf8');
        const lines = pending.split(/\r?\n|\r/);
        pending = lines.pop() ?? '';
        for (const l of lines) line(l, fromStdout);
      };
    };
    child.stdout!.on('data', reader(true));
    child.stderr!.on('data', reader(false));

    const stop = (why: CliResult['outcome']) => {
      if (ending) return;
      ending = why;
      o.log.warn(`stopping the Dev Container build (${why})`);
      killTree(child, 'SIGTERM');
      setTimeout(() => killTree(child, 'SIGKILL'), 5_000).unref();
    };
    const onAbort = () => stop('cancelled');
    o.signal?.addEventListener('abort', onAbort, { once: true });
    if (o.signal?.aborted) stop('cancelled');
    const timer = setTimeout(() => stop('timeout'), o.timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      resolve({ outcome: ending ?? 'error', detail: describeError(e), tail });
    });
    child.once('close', (code, sig) => {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      if (ending) return resolve({ outcome: ending, tail });
      if (code === 0 && lastJson?.outcome === 'success') return resolve({ outcome: 'success', tail });
      const detail = [lastJson?.message, lastJson?.description].filter(Boolean).join(': ') || `exit ${code ?? sig}`;
      if (lastJson?.message) {
        tail.push(detail);
        o.log.info(`devcontainer build: ${detail}`);
      }
      resolve({ outcome: 'error', detail, tail });
    });
  });
}

function killTree(child: ChildProcess, sig: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    if (process.platform === 'win32') spawn('taskkill', ['/pid', String(child.pid), '/T', '/F'], { stdio: 'ignore', windowsHide: true });
    else process.kill(-child.pid, sig);
  } catch {
    child.kill(sig);
  }
}

export function cancelled(): ToolError {
  return new ToolError('cancelled', 'The Dev Container image build was cancelled, so the program was not run.');
}
