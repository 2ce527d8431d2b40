import type Dockerode from 'dockerode';
import type { Logger } from '../../core/logger';
import type { ProgramRun } from '../../core/sandbox';
import type { StateOutcome } from '../../core/state';
import type { SandboxSpec } from '../container';

/** How a program ended, as a strategy saw it. */
export interface ExitInfo {
  /** null when the program was stopped before it exited by itself. */
  exitCode: number | null;
  /** The sandbox had to be restarted to stop the program (earlier files are gone). */
  replaced?: boolean;
  /** True only when the kernel's OOM killer (the container's cgroup) or the engine says so. */
  oomKilled?: boolean;
  /** Sentences for the model about what the sandbox had to do. */
  notes?: readonly string[];
  /** Session mode, through the runner: what the call did to the state, and the pid holding it (0: none). */
  state?: StateOutcome & { holder: number };
}

export type StrategyResult =
  | { kind: 'exit'; exit: ExitInfo }
  /** The program was not started (only the warm runner declines); `written`: program.py is in its directory. */
  | { kind: 'declined'; written: boolean };

/**
 * One way of running a call's program in a sandbox whose work directory is laid out: forked from
 * the warm runner, or started by `docker exec`. Both stop the program on the run's signal.
 */
export interface RunStrategy {
  /** `code` set: the strategy writes program.py itself (only the warm runner can). */
  run(workDir: string, run: ProgramRun, code?: Buffer): Promise<StrategyResult>;
}

/** What a strategy may ask of the sandbox it runs in. */
export interface SandboxOps {
  readonly name: string;
  readonly docker: Dockerode;
  readonly container: Dockerode.Container;
  readonly log: Logger;
  readonly spec: SandboxSpec;
  /** The runtime the sandbox runs under (runc, runsc, ...): what a stop means depends on it. */
  readonly runtime: string;
  /** Kill everything and start the container again (the work area is emptied). */
  restart(): Promise<void>;
  /** Starts `kill(-1)` as the sandbox user: every process of the program, none of ours (nor the session state's holder). */
  startKiller(deadlineMs: number): Promise<NodeJS.ReadableStream>;
  /**
   * Whether the container's cgroup counted an OOM kill since the last time this was asked (or the
   * container started); false when the count cannot be read. Asked only after a SIGKILL exit.
   */
  newOomKill(): Promise<boolean>;
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
