import * as fs from 'node:fs';
import * as path from 'node:path';
import { StreamCapture, type CapturedStream } from './capture';
import { ToolError, describeError, isToolError } from './errors';
import { formatResult } from './format';
import type { RunLimits } from './limits';
import type { Logger } from './logger';
import type { SandboxProvider } from './sandbox';

export interface ExecuteRequest {
  code: string;
  /** From the host's context (chat session, window, CLI --session); never from model input. */
  sessionKey: string;
  /** The sandbox's memory limit, named in the hint when the program is OOM-killed. */
  memoryMb?: number;
  /** When set, streams too long for the model are kept whole here (stdout.txt, stderr.txt). */
  spillDir?: string;
}

export interface ExecuteReport {
  /** Exactly what the model receives. */
  text: string;
  exitCode: number | null;
  timedOut: boolean;
  cancelled: boolean;
  outputLimited: boolean;
  durationMs: number;
  sandboxId: string;
  image: string;
  stdout: CapturedStream;
  stderr: CapturedStream;
  /** Files holding the whole stream when it was cut for the model. */
  stdoutFile?: string;
  stderrFile?: string;
}

type StopReason = 'timeout' | 'cancel' | 'output';

/**
 * One execute_code call: get the session's sandbox, run the program in a fresh directory with a
 * timeout, the caller's cancellation and an output ceiling, and phrase the result for the model.
 * Failures of the tool itself (no engine, no image) are thrown as ToolError; anything the
 * program does is a result.
 */
export async function executeCode(
  provider: SandboxProvider,
  log: Logger,
  request: ExecuteRequest,
  limits: RunLimits,
  signal?: AbortSignal,
): Promise<ExecuteReport> {
  if (signal?.aborted) throw new ToolError('cancelled', 'The run was cancelled before it started.');
  const started = Date.now();
  const stopper = new AbortController();
  const stop = (reason: StopReason) => {
    if (!stopper.signal.aborted) stopper.abort(reason);
  };
  const onCallerAbort = () => stop('cancel');
  signal?.addEventListener('abort', onCallerAbort, { once: true });

  try {
    const sandbox = await provider.acquire(request.sessionKey, signal ?? stopper.signal).catch((e: unknown) => {
      if (signal?.aborted) throw new ToolError('cancelled', 'The run was cancelled before it started.', { cause: e });
      throw e;
    });

    if (request.spillDir) fs.mkdirSync(request.spillDir, { recursive: true });
    const keep = limits.outputBudgetBytes;
    const stdout = new StreamCapture(keep, request.spillDir && path.join(request.spillDir, 'stdout.txt'));
    const stderr = new StreamCapture(keep, request.spillDir && path.join(request.spillDir, 'stderr.txt'));
    const checkFlood = () => {
      if (stdout.totalBytes + stderr.totalBytes > limits.maxOutputBytes) stop('output');
    };

    const timer = setTimeout(() => stop('timeout'), limits.timeoutMs);
    let exitCode: number | null;
    let workDir = '';
    let notes: string[] = [];
    try {
      const exit = await sandbox.run({
        code: request.code,
        signal: stopper.signal,
        onStdout: (chunk) => {
          stdout.write(chunk);
          checkFlood();
        },
        onStderr: (chunk) => {
          stderr.write(chunk);
          checkFlood();
        },
      });
      exitCode = exit.exitCode;
      workDir = exit.workDir;
      notes = exit.notes ?? [];
      if (exit.replaced) {
        log.warn(`sandbox for ${request.sessionKey} was restarted to stop the program`);
        notes.push('The sandbox had to be restarted to stop the program; files written by earlier calls are gone.');
      }
    } finally {
      clearTimeout(timer);
      await Promise.all([stdout.close(), stderr.close()]);
    }

    const reason = stopper.signal.aborted ? (stopper.signal.reason as StopReason) : undefined;
    const facts = {
      stdout: stdout.snapshot(),
      stderr: stderr.snapshot(),
      exitCode: reason ? null : exitCode,
      ...(reason === 'timeout' ? { timedOut: { seconds: Math.round(limits.timeoutMs / 100) / 10 } } : {}),
      ...(reason === 'cancel' ? { cancelled: true } : {}),
      ...(reason === 'output' ? { outputLimited: { maxBytes: limits.maxOutputBytes } } : {}),
      ...(request.memoryMb !== undefined ? { memoryLimitMb: request.memoryMb } : {}),
      notes,
    };
    const text = formatResult(facts, limits.outputBudgetBytes);
    const durationMs = Date.now() - started;
    log.info(
      `run in ${sandbox.id} ${workDir}: exit=${exitCode ?? '-'}${reason ? ` stopped=${reason}` : ''} ` +
        `stdout=${stdout.totalBytes}B stderr=${stderr.totalBytes}B ${durationMs}ms`,
    );
    return {
      text,
      exitCode: facts.exitCode,
      timedOut: reason === 'timeout',
      cancelled: reason === 'cancel',
      outputLimited: reason === 'output',
      durationMs,
      sandboxId: sandbox.id,
      image: sandbox.image,
      stdout: facts.stdout,
      stderr: facts.stderr,
      ...(stdout.spillFile ? { stdoutFile: stdout.spillFile } : {}),
      ...(stderr.spillFile ? { stderrFile: stderr.spillFile } : {}),
    };
  } catch (e) {
    if (isToolError(e)) {
      log.warn(`execute_code failed (${e.code}): ${describeError(e)}`);
      throw e;
    }
    log.error(`execute_code failed: ${describeError(e)}`);
    throw new ToolError(
      'sandbox_failed',
      'The sandbox failed while running the program. Try again; if it keeps failing, ask the user to check the "CodeAct Sandbox" output channel.',
      { cause: e },
    );
  } finally {
    signal?.removeEventListener('abort', onCallerAbort);
  }
}
