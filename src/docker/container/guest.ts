/**
 * The fixed in-sandbox programs. They are passed as `python3 -c <source>` argv elements: our
 * own source, never the model's, and never through a shell. The image needs nothing but python3.
 */

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
 * Stops a program and everything it started: kill(-1) reaches every process this uid may
 * signal except PID 1 (the keeper) and the caller, i.e. exactly the program's processes.
 */
export const KILL_ALL_SOURCE = [
  'import os, signal',
  'try:',
  '    os.kill(-1, signal.SIGKILL)',
  'except ProcessLookupError:',
  '    pass',
].join('\n');

/**
 * KILL_ALL_SOURCE for a sandbox that holds a session state: kill(-1) would take the holder (the
 * same uid) too, so everything is stopped (a stopped process cannot fork), each other process is
 * killed until none is left, and the spared ones go on. Only integers reach the source.
 */
export function killAllSparingSource(spare: readonly number[]): string {
  const pids = spare.filter((p) => Number.isInteger(p) && p > 1);
  if (pids.length === 0) return KILL_ALL_SOURCE;
  return [
    'import os, signal, time',
    `spare = {1, os.getpid(), ${pids.join(', ')}}`,
    // What kill(-1) reaches: our uid's live processes (the lock holder is root's, zombies are done).
    'def live():',
    '    out = []',
    '    for n in os.listdir("/proc"):',
    '        if n.isdigit() and int(n) not in spare:',
    '            try:',
    '                with open("/proc/%s/status" % n, "rb") as f:',
    '                    status = dict(l.split(b":", 1) for l in f.read().splitlines() if b":" in l)',
    '            except OSError:',
    '                continue',
    '            uid = status.get(b"Uid", b"").split()[:1]',
    '            if uid == [b"%d" % os.getuid()] and status.get(b"State", b"").strip()[:1] not in (b"Z", b"X", b"x"):',
    '                out.append(int(n))',
    '    return out',
    'try:',
    '    os.kill(-1, signal.SIGSTOP)',
    'except OSError:',
    '    pass',
    'give_up = time.monotonic() + 3',
    'while time.monotonic() < give_up:',
    '    others = live()',
    '    if not others:',
    '        break',
    '    for p in others:',
    '        try:',
    '            os.kill(p, signal.SIGKILL)',
    '        except OSError:',
    '            pass',
    'for p in spare - {1, os.getpid()}:',
    '    try:',
    '        os.kill(p, signal.SIGCONT)',
    '    except OSError:',
    '        pass',
  ].join('\n');
}

/** `user:group` for the engine's container and exec calls. */
export const SANDBOX_USER = `${SANDBOX_UID}:${SANDBOX_GID}`;

/**
 * Prints the container cgroup's OOM-kill count (cgroup v2 memory.events, v1 memory.oom_control),
 * or nothing when neither can be read: only then is a killed program blamed on memory.
 */
export const OOM_COUNT_SOURCE = [
  'for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):',
  '    try:',
  '        with open(path) as f:',
  '            for line in f:',
  '                key, _, value = line.partition(" ")',
  '                if key == "oom_kill":',
  '                    print(int(value))',
  '                    raise SystemExit(0)',
  '    except OSError:',
  '        pass',
].join('\n');

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
  ];
}
