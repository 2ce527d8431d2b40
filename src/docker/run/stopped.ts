import type Dockerode from 'dockerode';
import { ENGINE_DEADLINE_MS, isGvisor, readEngine } from '../engine';
import type { ExitInfo } from './runStrategy';

/**
 * How long a container whose runner channel (or exec stream) just failed may take to be reported
 * stopped. gVisor's sandbox dies as a whole; the engine learns it from the shim a moment after the
 * attach stream ends, and only then records why (State.OOMKilled).
 */
const SETTLE_MS = 5_000;

/** Said whenever the container itself stopped: the provider replaces it on the next call. */
export const SANDBOX_GONE_NOTE = 'The whole sandbox stopped with the program, so the next call gets a new one.';

/** The sandbox's first process was killed and no memory limit was involved. */
export function killedSentence(runtime: string): string {
  // Under runc the kernel drops a namespace init's unhandled signals, so only the host can kill it;
  // gVisor lets a process of the same user kill it.
  return isGvisor(runtime)
    ? 'The sandbox stopped while the program ran (its first process was killed: under gVisor a program can do that itself, or it was stopped from outside); the next call gets a new one.'
    : 'The sandbox stopped while the program ran (it was stopped from outside); the next call gets a new one.';
}

/**
 * gVisor's own kernel exited with a status of its own (the Go runtime's 2) and no OOM kill: it
 * could not get the host threads it needed, which a program gets to by starting processes or threads.
 */
export function gvisorGaveUpSentence(status: number, pidsLimit: number): string {
  return `The sandbox stopped while the program ran: gVisor's kernel ended with status ${status}, which most often means the program started more processes or threads than the sandbox can run (limit ${pidsLimit} processes). Start fewer; the next call gets a new sandbox.`;
}

export interface StoppedState {
  running: boolean;
  oomKilled: boolean;
  exitCode: number | undefined;
}

/** The container's state once it has settled: waits (briefly) for a dying container to be reported stopped. */
export async function settledState(container: Dockerode.Container): Promise<StoppedState | undefined> {
  const inspect = () =>
    readEngine(() => container.inspect(), 'the sandbox container (inspect)', ENGINE_DEADLINE_MS).then(
      (info) => info.State,
      () => undefined,
    );
  let state = await inspect();
  const giveUp = Date.now() + SETTLE_MS;
  while (state?.Running && Date.now() < giveUp) {
    await new Promise((r) => setTimeout(r, 100));
    state = await inspect();
  }
  if (!state) return undefined;
  return { running: state.Running === true, oomKilled: state.OOMKilled === true, exitCode: typeof state.ExitCode === 'number' ? state.ExitCode : undefined };
}

/**
 * What the model is told about a program during which the container stopped, from what the
 * engine recorded: the memory limit (State.OOMKilled), gVisor giving up, or a kill.
 */
export function stoppedExit(state: StoppedState | undefined, runtime: string, pidsLimit: number): ExitInfo {
  if (state?.oomKilled) return { exitCode: 137, oomKilled: true, notes: [SANDBOX_GONE_NOTE] };
  const status = state?.exitCode;
  if (status !== undefined && status > 128 && status !== 137) return { exitCode: null, notes: [signalledSentence(status)] };
  // Below 128 the status is gVisor's own (its Go runtime exits 2 when it cannot get a thread).
  if (isGvisor(runtime) && status !== undefined && status !== 137 && status !== 0) {
    return { exitCode: null, notes: [gvisorGaveUpSentence(status, pidsLimit)] };
  }
  return { exitCode: null, notes: [killedSentence(runtime)] };
}

/**
 * The sandbox's first process ended on a signal other than SIGKILL: 143 is SIGTERM, what an engine
 * sends when it stops or restarts (dockerd being restarted, `docker stop`). Nothing the program did
 * is known to have caused it, so the program is not blamed.
 */
export function signalledSentence(status: number): string {
  const signal = status - 128;
  const name = signal === 15 ? 'SIGTERM, as an engine stops or restarts a container' : `signal ${signal}`;
  return `The sandbox was stopped from outside while the program ran (${name}); the program is not known to have caused it. Run it again: the next call gets a new sandbox.`;
}

/** Why the container stopped, in a few words for the log. */
export function stoppedReason(state: StoppedState | undefined): string {
  if (!state) return 'gone';
  if (state.oomKilled) return 'out of memory';
  return `exit status ${state.exitCode ?? 'unknown'}`;
}
