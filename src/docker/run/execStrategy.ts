import { Writable } from 'node:stream';
import type Dockerode from 'dockerode';
import { describeError } from '../../core/errors';
import type { ProgramRun } from '../../core/sandbox';
import { ENGINE_DEADLINE_MS, isGvisor, withDeadline } from '../engine';
import { PROGRAM_NAME, SANDBOX_USER } from '../container';
import { settledState, stoppedExit, stoppedReason } from './stopped';
import { delay, type ExitInfo, type RunStrategy, type SandboxOps, type StrategyResult } from './runStrategy';

/** After asking the program to die, how long before the whole sandbox is restarted instead. */
export const KILL_GRACE_MS = 3_000;
/** How long one kill may take to end the program's output before it is tried again. */
const KILL_RETRY_MS = 500;
/** After the program's own process exited, how long its leftover children may keep the output open. */
export const ORPHAN_GRACE_MS = 1_000;
/** SIGKILL's exit status: the only one an OOM kill can give. */
export const KILLED_STATUS = 137;

/**
 * Starts `python3 program.py` with `docker exec` (a fixed argv, the program a file), streams its
 * output, stops it (and whatever it started) on the run's signal, and ends the call when the
 * program's own process is gone even if children it left keep the output open.
 */
export class ExecStrategy implements RunStrategy {
  constructor(private readonly ops: SandboxOps) {}

  async run(workDir: string, run: ProgramRun): Promise<StrategyResult> {
    const { ops } = this;
    const exec = await withDeadline(
      ops.container.exec({
        // A fixed argv: the program is a file, never part of a command line.
        Cmd: ['python3', `${workDir}/${PROGRAM_NAME}`],
        WorkingDir: workDir,
        User: SANDBOX_USER,
        AttachStdin: false,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
      }),
      ENGINE_DEADLINE_MS,
      'create exec',
    );
    const stream = (await withDeadline(exec.start({ hijack: true, stdin: false }), ENGINE_DEADLINE_MS, 'start exec')) as NodeJS.ReadWriteStream;
    run.onStart();

    const ended = new Promise<void>((resolve, reject) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', reject);
    });
    const runtimeWords = new RuntimeWordsHoldback(ops.runtime, run.onStderr);
    ops.docker.modem.demuxStream(stream, sink(runtimeWords.passing(run.onStdout)), sink((c) => runtimeWords.stderr(c)));

    let replaced = false;
    let stopping: Promise<void> | undefined;
    const stop = () => {
      stopping ??= this.stopProgram(ended).then((r) => {
        replaced = r;
      });
      return stopping;
    };
    const onAbort = () => void stop();
    run.signal.addEventListener('abort', onAbort, { once: true });
    // An abort that came while the exec was being created and started fired no event: stop now.
    if (run.signal.aborted) void stop();
    // A program whose children outlive it keeps the output open; once its own process is gone,
    // give them a moment, then stop them so the call returns.
    const watcher = this.watchForOrphans(exec, ended, stop);
    // Under gVisor a container that dies mid-exec (its memory limit ends the whole sandbox) never
    // ends the exec's stream: the engine's word that the container stopped ends the call instead.
    const stopWatch = new AbortController();
    const containerStopped = ops.container.wait({ condition: 'not-running', abortSignal: stopWatch.signal }).then(
      () => true,
      () => new Promise<boolean>(() => {}),
    );
    let died = false;
    try {
      died = await Promise.race([ended.then(() => false), containerStopped.then(() => stopping === undefined)]);
      if (!died) await ended;
    } catch (e) {
      if (!run.signal.aborted) throw e;
    } finally {
      run.signal.removeEventListener('abort', onAbort);
      watcher.cancel();
      stopWatch.abort();
    }
    // The exec may end first, with the runtime's words as its last stderr ("waiting on pid ...:
    // EOF", exit 128) while the engine has not yet seen the container stop: its state decides.
    if (!died && runtimeWords.holding) died = !(await settledState(ops.container))?.running;
    if (died) {
      (stream as unknown as { destroy?: () => void }).destroy?.();
      const dropped = runtimeWords.drop();
      if (dropped) ops.log.info(`sandbox ${ops.name}: the runtime said: ${dropped.trim()}`);
      const state = await settledState(ops.container);
      ops.log.warn(`sandbox ${ops.name}: stopped while the program ran (${stoppedReason(state)}, under ${ops.runtime})`);
      return { kind: 'exit', exit: stoppedExit(state, ops.runtime, ops.spec.limits.pidsLimit) };
    }
    runtimeWords.release();
    if (stopping) await stopping;
    if (run.signal.aborted) return { kind: 'exit', exit: { exitCode: null, ...(replaced ? { replaced } : {}) } };
    const exitCode = await exitCodeOf(exec);
    return { kind: 'exit', exit: { exitCode, ...(exitCode === KILLED_STATUS && (await this.ops.newOomKill()) ? { oomKilled: true } : {}) } };
  }

  private watchForOrphans(exec: Dockerode.Exec, ended: Promise<void>, stop: () => Promise<void>): { cancel(): void } {
    let cancelled = false;
    let timer: NodeJS.Timeout | undefined;
    const tick = async () => {
      if (cancelled) return;
      const info = await exec.inspect().catch(() => undefined);
      if (cancelled) return;
      if (info && !info.Running) {
        const done = await Promise.race([ended.then(() => true, () => true), delay(ORPHAN_GRACE_MS).then(() => false)]);
        if (!done && !cancelled) {
          this.ops.log.info(`sandbox ${this.ops.name}: program exited but left processes holding its output; stopping them`);
          await stop();
        }
        return;
      }
      timer = setTimeout(() => void tick(), 500);
    };
    // Short programs end before the first check; only longer ones pay for polling.
    timer = setTimeout(() => void tick(), 1000);
    return {
      cancel() {
        cancelled = true;
        if (timer) clearTimeout(timer);
      },
    };
  }

  /** Returns true when the sandbox had to be restarted to stop the program. */
  private async stopProgram(ended: Promise<void>): Promise<boolean> {
    const { ops } = this;
    const streamEnded = ended.then(
      () => true,
      () => true,
    );
    // The engine starts an exec's process only after its stream is attached, so a program stopped
    // right after it was started may not exist yet when the first kill runs: kill again until its
    // output ends or the grace time is up.
    const giveUp = Date.now() + KILL_GRACE_MS;
    const killers: Promise<void>[] = [];
    let stopped = false;
    try {
      while (Date.now() < giveUp && !stopped) {
        killers.push(endOf(await ops.startKiller(giveUp - Date.now())));
        const wait = Math.max(0, Math.min(KILL_RETRY_MS, giveUp - Date.now()));
        stopped = await Promise.race([streamEnded, delay(wait).then(() => false)]);
      }
    } catch (e) {
      ops.log.warn(`sandbox ${ops.name}: could not stop the program from inside (${describeError(e)})`);
    }
    // A killer that has not run yet would kill whatever runs next in the sandbox (the next call's
    // program; on a loaded machine a killer's python3 can take seconds to start): every one this
    // started has ended before the sandbox serves again, or the sandbox is restarted.
    const killersEnded = Promise.all(killers).then(() => true);
    if (stopped && (await Promise.race([killersEnded, delay(KILL_GRACE_MS).then(() => false)]))) return false;
    if (stopped) ops.log.warn(`sandbox ${ops.name}: a kill it started has not ended; restarting so that it cannot reach the next program`);
    // A fork bomb can leave no room for even the killer: restart the whole container.
    else ops.log.warn(`sandbox ${ops.name}: restarting to stop the program`);
    await ops.restart();
    await Promise.race([streamEnded, delay(KILL_GRACE_MS)]);
    return true;
  }
}

async function exitCodeOf(exec: Dockerode.Exec): Promise<number | null> {
  for (let i = 0; i < 20; i++) {
    const info = await exec.inspect();
    if (!info.Running) return info.ExitCode ?? null;
    await delay(50);
  }
  return null;
}

/**
 * runsc's shim writes its own failure ("waiting on pid N: ... WaitPID failed: EOF") to an exec's
 * stderr when the sandbox dies under it. That is the runtime's word, not the program's: a stderr
 * chunk that starts so is held back, dropped when the container turns out to have died, and
 * passed on as soon as anything else arrives or the exec ends normally.
 */
class RuntimeWordsHoldback {
  private held: Buffer | undefined;
  constructor(
    private readonly runtime: string,
    private readonly deliver: (chunk: Buffer) => void,
  ) {}

  stderr(chunk: Buffer): void {
    this.release();
    if (isGvisor(this.runtime) && GVISOR_WAIT_FAILED.test(chunk.toString('latin1', 0, 64))) this.held = chunk;
    else this.deliver(chunk);
  }

  passing(deliver: (chunk: Buffer) => void): (chunk: Buffer) => void {
    return (chunk) => {
      this.release();
      deliver(chunk);
    };
  }

  /** Whether the last stderr chunk was the runtime's, held back. */
  get holding(): boolean {
    return this.held !== undefined;
  }

  release(): void {
    const held = this.held;
    this.held = undefined;
    if (held) this.deliver(held);
  }

  drop(): string | undefined {
    const held = this.held;
    this.held = undefined;
    return held?.toString('utf8');
  }
}

const GVISOR_WAIT_FAILED = /^waiting on pid [0-9]+: /;

function sink(deliver: (chunk: Buffer) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      deliver(chunk);
      done();
    },
  });
}

export type { ExitInfo };

/** Resolves when a guest program's stream has ended (its process is gone), whatever the reason. */
function endOf(stream: NodeJS.ReadableStream): Promise<void> {
  return new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
    stream.resume();
  });
}
