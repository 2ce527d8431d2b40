/**
 * The fixed in-sandbox programs. They are passed as `python3 -c <source>` argv elements: our
 * own source, never the model's, and never through a shell. The image needs nothing but python3.
 */
import { guestSource } from './runnerProgram';

/** The uid/gid everything in the sandbox runs as: `nobody` exists in practically every image. */
export const SANDBOX_UID = 65534;
export const SANDBOX_GID = 65534;

/** Root of the writable, size-bounded work area (a tmpfs volume). */
export const WORK_ROOT = '/sandbox';
export const HOME_DIR = `${WORK_ROOT}/home`;
export const TMP_DIR = `${WORK_ROOT}/tmp`;
export const RUNS_DIR = `${WORK_ROOT}/runs`;
export const PROGRAM_NAME = 'program.py';

/**
 * PID 1 of the sandbox: sleeps, reaps orphans (a program's leftover children would otherwise
 * pile up as zombies and eat the pids limit) and exits promptly on SIGTERM so removal is fast.
 */
export const KEEPER_SOURCE = [
  'import os, signal',
  'def reap(*_):',
  '    while True:',
  '        try:',
  '            pid, _status = os.waitpid(-1, os.WNOHANG)',
  '        except ChildProcessError:',
  '            return',
  '        if pid == 0:',
  '            return',
  'signal.signal(signal.SIGCHLD, reap)',
  'signal.signal(signal.SIGTERM, lambda *_: os._exit(0))',
  'while True:',
  '    signal.pause()',
].join('\n');

/**
 * Stops a program and everything it started, from `docker exec` (no runner to ask): kill(-1)
 * reaches every process this uid may signal except PID 1 and the caller, i.e. exactly the
 * program's processes. With `spare` (a session's state holder, which kill(-1) would take too),
 * everything is stopped first and each other process killed until none is left (a holder PID 1
 * stopped stays stopped). It ends once every process it killed is dead, so the call's connections
 * are closed and logged before the call's end is marked. The runner's own _kill_all does it (part
 * 05); only integers reach the source.
 */
export function killAllSparingSource(spare: readonly number[]): string {
  const pids = spare.filter((p) => Number.isInteger(p) && p > 1);
  return `${guestSource()}\n_kill_all(None, (${pids.map((p) => `${p},`).join(' ')}), wait=True)\n`;
}

export { GUEST_PYTHON_FLAGS } from './pythonFlags';

/** `user:group` for the engine's container and exec calls. */
export const SANDBOX_USER = `${SANDBOX_UID}:${SANDBOX_GID}`;

/**
 * Prints the container cgroup's OOM-kill count (cgroup v2 memory.events, v1 memory.oom_control),
 * or nothing when neither can be read: only then is a killed program blamed on memory. The
 * runner's own read_oom_kills reads it (part 05).
 */
export function oomCountSource(): string {
  return `${guestSource()}\nn = read_oom_kills()\nif n is not None:\n    print(n)\n`;
}

export function sandboxEnv(): string[] {
  return [
    `HOME=${HOME_DIR}`,
    `TMPDIR=${TMP_DIR}`,
    'LANG=C.UTF-8',
    // Output arrives as it is printed, so a program stopped by the timeout still shows its progress.
    'PYTHONUNBUFFERED=1',
    'PYTHONDONTWRITEBYTECODE=1',
    // No display in a sandbox; plots must go to files.
    'MPLBACKEND=Agg',
    `MPLCONFIGDIR=${TMP_DIR}/matplotlib`,
    // pip as the sandbox user installs into the user site in the work area (the image is
    // read-only); Debian's Python marks its own site as managed, and pip would refuse even that.
    'PIP_BREAK_SYSTEM_PACKAGES=1',
  ];
}
