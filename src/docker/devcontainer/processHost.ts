/**
 * The one place this backend starts a process and stops it with everything it started. Callers
 * describe the command as data and get its output lines and its exit back (like the Dev
 * Containers CLI's own CLIHost), so what they build and how they read the output is tested with
 * a fake host, without a process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';

export interface ProcessCommand {
  /** The executable; its arguments go to it as they are, never through a shell. */
  file: string;
  args: readonly string[];
  env: NodeJS.ProcessEnv;
}

export type OutputStream = 'stdout' | 'stderr';
export type StopReason = 'timeout' | 'cancelled';

export interface ProcessRunOptions {
  signal?: AbortSignal;
  timeoutMs: number;
  /** Every line of output, without its ending ("\n", "\r\n", or the lone "\r" of a progress bar). */
  onLine?: (line: string, stream: OutputStream) => void;
  /** Once, when the host starts stopping the process (the process may take a while to go). */
  onStop?: (why: StopReason) => void;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the host stopped the process (timeout or abort). */
  stopped?: StopReason;
  /** The process could not be started, or failed as a process. */
  error?: unknown;
}

export interface ProcessHost {
  run(command: ProcessCommand, options: ProcessRunOptions): Promise<ProcessExit>;
}

/** After SIGTERM, this long before SIGKILL. */
const KILL_GRACE_MS = 5_000;

export const nodeProcessHost: ProcessHost = { run: runProcess };

function runProcess(command: ProcessCommand, o: ProcessRunOptions): Promise<ProcessExit> {
  return new Promise((resolve) => {
    if (o.signal?.aborted) {
      o.onStop?.('cancelled');
      resolve({ code: null, signal: null, stopped: 'cancelled' });
      return;
    }
    let child: ChildProcess;
    try {
      // Its own process group, so that stopping it reaches the docker commands it started too
      // (on Windows, taskkill /T walks the tree instead).
      child = spawn(command.file, [...command.args], { env: command.env, stdio: ['ignore', 'pipe', 'pipe'], detached: process.platform !== 'win32', windowsHide: true });
    } catch (e) {
      resolve({ code: null, signal: null, error: e });
      return;
    }
    const stdout = lineSplitter((l) => o.onLine?.(l, 'stdout'));
    const stderr = lineSplitter((l) => o.onLine?.(l, 'stderr'));
    child.stdout!.on('data', stdout.push);
    child.stderr!.on('data', stderr.push);

    let stopped: StopReason | undefined;
    let settled = false;
    const settle = (exit: Omit<ProcessExit, 'stopped'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      resolve({ ...exit, ...(stopped ? { stopped } : {}) });
    };
    const stop = (why: StopReason) => {
      if (stopped) return;
      stopped = why;
      o.onStop?.(why);
      killTree(child, 'SIGTERM');
      setTimeout(() => killTree(child, 'SIGKILL'), KILL_GRACE_MS).unref();
    };
    const onAbort = () => stop('cancelled');
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => stop('timeout'), o.timeoutMs);
    child.once('error', (error) => settle({ code: null, signal: null, error }));
    child.once('close', (code, signal) => {
      stdout.end();
      stderr.end();
      settle({ code, signal });
    });
  });
}

/** Cuts a byte stream into lines; a multi-byte character split across chunks stays whole. */
export function lineSplitter(onLine: (line: string) => void): { push: (chunk: Buffer | string) => void; end: () => void } {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  const emit = (text: string) => {
    pending += text;
    const lines = pending.split(/\r?\n|\r/);
    pending = lines.pop() ?? '';
    for (const l of lines) onLine(l);
  };
  return {
    push: (chunk) => emit(typeof chunk === 'string' ? chunk : decoder.write(chunk)),
    end: () => {
      emit(decoder.end());
      if (pending) onLine(pending);
      pending = '';
    },
  };
}

function killTree(child: ChildProcess, sig: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    if (process.platform === 'win32') {
      spawn('taskkill', ['/pid', String(child.pid), '/T', '/F'], { stdio: 'ignore', windowsHide: true }).once('error', () => child.kill(sig));
    } else {
      process.kill(-child.pid, sig);
    }
  } catch {
    child.kill(sig);
  }
}
