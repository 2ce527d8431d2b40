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

/** The name the warm runner's child forked ahead has while it waits for its run (the runner's WAITING_NAME). */
const WAITING_NAME = 'codeact-waiting';
/** How long the end of a call waits for its processes to be dead before it goes on without them. */
export const END_WAIT_S = 3;

/**
 * Python lines that end a call's processes and return only once each is dead (a zombie or gone:
 * its files, sockets included, closed by the kernel), at most END_WAIT_S seconds. Spared: PID 1,
 * the caller, `spare` (a session's state holder), and the warm runner's child forked ahead for the
 * next run (PID 1's child, under its own name, or PID 1's own arguments a moment after its fork):
 * killing it would cost the next call its fork. A program's process that passes for it is spared
 * here, but not by the runner's end of a call or the kill after `docker exec`, which spare no
 * name. Only integers reach the source.
 */
export function endAllSparingLines(spare: readonly number[]): string {
  const pids = spare.filter((p) => Number.isInteger(p) && p > 1);
  return [
    guestSource(),
    'def _read(path):',
    '    try:',
    "        with open(path, 'rb') as f:",
    '            return f.read()',
    '    except OSError:',
    "        return b''",
    "_runner_args = _read('/proc/1/cmdline')",
    'def _waiting_ahead(pid):',
    "    st = _read('/proc/%d/stat' % pid)",
    "    rest = st[st.rfind(b')') + 2:].split()",
    '    if len(rest) < 2 or rest[1] != b"1":',
    '        return False',
    "    # Named so while it waits; a moment after its fork, still PID 1's name and arguments.",
    `    return st[st.find(b'(') + 1:st.rfind(b')')] == b'${WAITING_NAME}' or _read('/proc/%d/cmdline' % pid) == _runner_args`,
    `_spare = (${pids.map((p) => `${p},`).join(' ')}) + tuple(p for p in _live_pids() if _waiting_ahead(p))`,
    `_give_up = time.monotonic() + ${END_WAIT_S}`,
    'while True:',
    '    _kill_all(None, _spare)',
    '    if not [p for p in _live_pids() if p not in (1, os.getpid()) and p not in _spare] or time.monotonic() > _give_up:',
    '        break',
    '    time.sleep(0.005)',
  ].join('\n');
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

/** A sandbox with credentials: its CA alone, and that CA with the image's own trust store (the work area's tls folder). */
export const TLS_DIR = `${WORK_ROOT}/tls`;
export const CA_CERT = `${TLS_DIR}/ca.pem`;
export const CA_BUNDLE = `${TLS_DIR}/ca-bundle.pem`;

/**
 * A sandbox with credentials: the variables by which OpenSSL, requests, curl, pip, git and Node
 * trust the sandbox's own CA (which signs the bound hosts' certificate) beside the image's store,
 * and each placeholder binding's stand-in. Never a value: the sandbox has none.
 */
export function credentialEnv(standIns: Readonly<Record<string, string>>): string[] {
  return [
    ...['SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'PIP_CERT', 'GIT_SSL_CAINFO', 'AWS_CA_BUNDLE'].map((k) => `${k}=${CA_BUNDLE}`),
    `NODE_EXTRA_CA_CERTS=${CA_CERT}`,
    ...Object.entries(standIns).map(([k, v]) => `${k}=${v}`),
  ];
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
