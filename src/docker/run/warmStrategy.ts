import { randomInt } from 'node:crypto';
import { DEFAULTS } from '../../core/limits';
import { MAX_DATA_PAYLOAD } from '../../core/runnerProtocol';
import type { ProgramRun } from '../../core/sandbox';
import { SandboxGoneError } from '../engine';
import { KILLED_STATUS, KILL_GRACE_MS, ORPHAN_GRACE_MS } from './execStrategy';
import type { RunnerChannel, RunnerOutcome } from './runnerChannel';
import type { RunStrategy, SandboxOps, StrategyResult } from './runStrategy';
import { settledState, stoppedExit, stoppedReason } from './stopped';

/**
 * How long a call waits for a runner that is still starting (importing its preload modules)
 * before it uses docker exec instead. Short: a fresh `python3` costs less than waiting for a
 * preload it may not need, and the runner goes on warming for the next call.
 */
const RUNNER_READY_WAIT_MS = 300;
/**
 * In session mode a call waits for the runner as long as it takes to preload: docker exec cannot
 * keep a state, so not waiting would cost the chat its state for the sake of a tenth of a second.
 */
const RUNNER_SESSION_WAIT_MS = 60_000;
/**
 * A runner that said it starts over (it preloads what a program imported) is waited for: the
 * call's program would pay those imports itself, and a `docker exec` beside the restart could
 * meet it (the old runner ends every other process of the sandbox before it starts over).
 */
const RUNNER_RESTART_WAIT_MS = 60_000;
/** How long a runner whose channel failed has to answer a new hello before the sandbox is restarted. */
const RUNNER_REPAIR_WAIT_MS = 5_000;

export interface WarmOps extends SandboxOps {
  /** The channel to the runner, when the sandbox has one (it changes when the sandbox reconnects). */
  readonly runner: RunnerChannel | undefined;
  /** Attaches to the runner again and greets it. */
  reconnect(): Promise<void>;
  isAlive(): Promise<boolean>;
}

/** Whether the runner can take the next program, and what the model must be told about getting there. */
export interface WarmReadiness {
  ready: boolean;
  notes: string[];
}

/**
 * Forks the program from the warm runner (the sandbox's PID 1). Declines, so the call falls back
 * to `docker exec`, whenever the runner is not there, still preloading, or says no.
 */
export class WarmStrategy implements RunStrategy {
  /** Run ids are unique across hosts that share the sandbox (CLI sessions), not only in this one. */
  private nextId = randomInt(1, 2 ** 30);

  constructor(private readonly ops: WarmOps) {}

  /** True when the runner is ready right now (no waiting). */
  get readyNow(): boolean {
    return this.ops.runner?.state === 'ready';
  }

  /**
   * Waits for a starting runner (it preloads), and repairs a channel that failed: attaches again,
   * and when the runner does not answer, restarts the sandbox (the notes say so).
   */
  async prepare(signal: AbortSignal, session = false): Promise<WarmReadiness> {
    const { ops } = this;
    const notes: string[] = [];
    if (!ops.runner) return { ready: false, notes };
    if (ops.runner.state === 'broken') {
      // A stopped container is the provider's to replace (as a failed docker exec would say).
      if (!(await ops.isAlive())) throw new SandboxGoneError('the sandbox container is not running');
      ops.log.info(`sandbox ${ops.name}: reconnecting to the runner (${ops.runner.reason ?? 'not connected'})`);
      await ops.reconnect();
      const fresh = ops.runner as RunnerChannel | undefined;
      if (!fresh || !(await fresh.whenReady(RUNNER_REPAIR_WAIT_MS, signal))) {
        if (signal.aborted || fresh?.state === 'unusable') return { ready: false, notes };
        ops.log.warn(`sandbox ${ops.name}: the runner does not answer; restarting the sandbox`);
        await ops.restart();
        notes.push("The sandbox's runner stopped answering, so the sandbox was restarted; files written by earlier calls are gone.");
      }
    }
    const runner = ops.runner;
    if (!runner) return { ready: false, notes };
    // Just restarted for the runner's sake: give it the time to come up.
    const wait = session ? RUNNER_SESSION_WAIT_MS : notes.length ? RUNNER_REPAIR_WAIT_MS : runner.restarting ? RUNNER_RESTART_WAIT_MS : RUNNER_READY_WAIT_MS;
    return { ready: await runner.whenReady(wait, signal), notes };
  }

  /**
   * A session call is over and its files are read: the runner forks the next program's process
   * from the state now (see RunnerChannel.ahead). Resolves whether it waits.
   */
  async ahead(): Promise<boolean> {
    const runner = this.ops.runner;
    if (runner?.state !== 'ready') return false;
    const ready = await runner.ahead(this.nextId++);
    if (!ready) this.ops.log.debug(`sandbox ${this.ops.name}: no process forked ahead of the next session call`);
    return ready;
  }

  /**
   * One program through the runner. `code` set: the runner writes program.py itself. A channel
   * that fails while the program runs ends in a restart (or, when the container died, in an exit
   * the model is told about).
   */
  async run(workDir: string, run: ProgramRun, code?: Buffer): Promise<StrategyResult> {
    const { ops } = this;
    const runner = ops.runner;
    if (!runner || runner.state !== 'ready') return { kind: 'declined', written: !code };
    const outcome: RunnerOutcome = await runner.run(
      this.nextId++,
      // The host stops a flood first (executeCode's maxOutputBytes); this is the runner's own backstop.
      {
        dir: workDir,
        ...(code ? { code } : {}),
        maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024 + MAX_DATA_PAYLOAD,
        orphanGraceMs: ORPHAN_GRACE_MS,
        ...(run.state ? { state: { reset: run.state.reset } } : {}),
      },
      { onStdout: (c) => run.onStdout(c), onStderr: (c) => run.onStderr(c), onStarted: () => run.onStart() },
      run.signal,
      KILL_GRACE_MS,
    );
    switch (outcome.kind) {
      case 'exit': {
        if (outcome.orphans) ops.log.info(`sandbox ${ops.name}: program exited but left processes holding its output; they were stopped`);
        const exitCode = run.signal.aborted ? null : outcome.exitCode;
        // The runner says whether the kernel OOM-killed its child when it can tell; else the cgroup is asked.
        const oomKilled = outcome.oomKilled ?? (exitCode === KILLED_STATUS && (await ops.newOomKill()));
        const s = outcome.state;
        const state = s ? { from: s.from, now: s.now, kept: s.kept, holder: s.holder, ...(s.reason ? { reason: s.reason } : {}), ...(s.dropped ? { dropped: s.dropped } : {}) } : undefined;
        return { kind: 'exit', exit: { exitCode, ...(oomKilled ? { oomKilled: true } : {}), ...(state ? { state } : {}) } };
      }
      case 'declined':
        ops.log.info(`sandbox ${ops.name}: the runner left ${workDir} to docker exec (${outcome.reason})`);
        return { kind: 'declined', written: code ? outcome.written : true };
      case 'failed':
        if (!outcome.started) {
          ops.log.warn(`sandbox ${ops.name}: the runner failed before the program started (${outcome.error.message}); using docker exec`);
          return { kind: 'declined', written: !code };
        }
    }
    // The program started and the channel failed: the container died (its PID 1 is the runner),
    // or the runner cannot be trusted any more. Either way nothing more of the run can be had.
    // A session's state lived in the sandbox's processes: it ends with them.
    const ended = run.state ? { state: { from: '', now: '', kept: false, holder: 0, ended: true } } : {};
    const state = await settledState(ops.container);
    if (!state?.running) {
      // Not run again (it may have done half its work): the next call replaces the sandbox.
      ops.log.warn(`sandbox ${ops.name}: stopped while the program ran (${stoppedReason(state)}, under ${ops.runtime})`);
      return { kind: 'exit', exit: { ...stoppedExit(state, ops.runtime, ops.spec.limits.pidsLimit), ...ended } };
    }
    ops.log.warn(`sandbox ${ops.name}: the runner failed while the program ran (${outcome.error.message}); restarting the sandbox`);
    await ops.restart();
    return { kind: 'exit', exit: { exitCode: null, replaced: true, ...ended } };
  }
}
