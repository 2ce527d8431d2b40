# The sandbox runner, part 00 (resources/runner/README.md draws the parts): its imports and
# constants, then frames and replies.
import os
import sys

# What a fresh `python3 file` has loaded, taken before this file imports anything of its own
# (stage 1's values are the ones used; stage 0 is replaced by an exec).
_BASE_MODULES = frozenset(sys.modules)
# The environment the runner started with: a restart goes back to it (see _stage0_exec).
_START_ENV = dict(os.environ)
_BUILTINS_COPY = dict(sys.modules['builtins'].__dict__)

# Built in, and importing it does nothing a program could see (it is the interpreter's own list);
# imported here, since a child that imports it at its end pays for the import machinery's pages,
# each a fault under gVisor: 1.5 to 2.8 ms of a warm call (data image).
import atexit  # noqa: E402
import _signal  # noqa: E402  (loaded by the interpreter already: adds nothing to sys.modules)
import gc  # noqa: E402
import select  # noqa: E402

try:
    import ctypes  # noqa: E402
except ImportError:  # no libffi: the runner stays a keeper (see _Native)
    ctypes = None

PROTOCOL_VERSION = 1
RUNS = '/sandbox/runs'
MAGIC = b'CX'
HEADER = 12
HOST_KINDS = (b'h', b'r', b'k', b'a')
# The largest host frame read (a run request with its program); a longer one is skipped.
MAX_REQUEST = 4 * 1024 * 1024
# Output is read, and sent in O/E frames, at most this much at a time: the host's limit for them.
CHUNK = 65536
# The name (comm) of a child forked ahead while it waits for its run.
WAITING_NAME = b'codeact-waiting'
# How long a child that reported its exit may take to be gone before it is stopped (a legitimate
# exit() of a large process takes milliseconds; a program that faked the report is not exiting).
DYING_GRACE_S = 5

# A session program's own limits (see own_limits). Left to the sandbox of what is free when the
# program starts: at least this or a sixteenth of the total (gVisor's own memory, outside what its
# /proc/meminfo counts, took up to 10 MB here; a hog at its limit left 15 MB of 256 unused).
OWN_LIMIT_RESERVE = 16 << 20
# Room above the limit for a program that reached it to print its traceback and exit.
OWN_LIMIT_EXIT_ROOM = 8 << 20
# What a process of a fork bomb cost under gVisor here (4 to 7 MB, more with a larger state), with
# a margin; and at most this many: PID 1 did not always stop a bomb of 256 within the host's 3 s.
OWN_PROCESS_COST = 8 << 20
OWN_PROCESS_CAP = 64
_RLIMIT_NPROC = 6
_RLIMIT_AS = 9
_SIGINT = 2
_SIGCHLD = 17
# How long a state holder has to fork the next program before its state is given up.
HOLDER_START_SECONDS = 5.0
_BOOT = 'import os;exec(os.read(3,1<<20)) '


def _log(msg):
    try:
        os.write(2, ('[codeact-runner] %s\n' % msg).encode('utf-8', 'replace'))
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# Frames and replies. Pure functions of their arguments: test/python checks them against the
# golden frames that test/unit checks the host's end with (test/fixtures/runner-frames.json).
def json_text(v):
    """JSON of the few types replies use, ASCII only (so a reply is never bad UTF-8)."""
    if v is None:
        return 'null'
    if v is True:
        return 'true'
    if v is False:
        return 'false'
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        out = []
        for c in v:
            o = ord(c)
            if c in '"\\' or o < 0x20 or o > 0x7e:
                out.append('\\u%04x' % o if o < 0x10000 else '?')
            else:
                out.append(c)
        return '"' + ''.join(out) + '"'
    if isinstance(v, (list, tuple)):
        return '[' + ','.join(json_text(x) for x in v) + ']'
    if isinstance(v, dict):
        return '{' + ','.join(json_text(str(k)) + ':' + json_text(x) for k, x in v.items()) + '}'
    return json_text(str(v))


def encode_frame(kind, rid, payload):
    """One frame to the host; a dict payload is sent as JSON."""
    if isinstance(payload, dict):
        payload = json_text(payload).encode()
    return MAGIC + kind + b'\0' + rid.to_bytes(4, 'big') + len(payload).to_bytes(4, 'big') + payload


class FrameReader:
    """Frames from the host. Garbage (e.g. a half-written frame of a host that died) is skipped:
    reading resumes at the next magic, past a header of another kind or of an oversized length."""

    def __init__(self):
        self.buf = b''

    def push(self, data):
        self.buf += data

    def frames(self):
        """(kind, id, payload) of each complete frame, lazily: what is not taken stays buffered."""
        while True:
            at = self.buf.find(MAGIC)
            if at < 0:
                self.buf = self.buf[-1:]
                return
            if at:
                self.buf = self.buf[at:]
            if len(self.buf) < HEADER:
                return
            kind = self.buf[2:3]
            rid = int.from_bytes(self.buf[4:8], 'big')
            n = int.from_bytes(self.buf[8:12], 'big')
            if kind not in HOST_KINDS or n > MAX_REQUEST:
                self.buf = self.buf[2:]
                continue
            if len(self.buf) < HEADER + n:
                return
            payload = self.buf[HEADER:HEADER + n]
            self.buf = self.buf[HEADER + n:]
            yield kind, rid, payload


def parse_config(text):
    cfg = {}
    for part in text.split(';'):
        k, _, v = part.partition('=')
        if k:
            cfg[k] = v
    return cfg


def hello_nonce(payload):
    nonce = ''
    for line in payload.decode('ascii', 'replace').splitlines():
        k, _, v = line.partition('=')
        if k == 'nonce':
            nonce = v[:64]
    return nonce


def hello_reply(nonce, pid, python, unusable, problem, preloaded, missing, dirty):
    info = {
        't': 'hello',
        'v': PROTOCOL_VERSION,
        'nonce': nonce,
        'pid': pid,
        'python': python,
        'usable': unusable is None,
        'preloaded': preloaded,
        'missing': missing,
        'dirty': dirty,
    }
    if problem:
        info['reason'] = problem
    if unusable:
        info['reason'] = unusable
    return info


def started_reply(pid):
    return {'t': 'started', 'pid': pid}


def declined_reply(reason, written):
    return {'t': 'declined', 'reason': reason, 'written': written}


def ahead_reply(ready):
    """The answer to the host's `a` (the last call is over): whether the next session program's
    process was forked from the state and waits, stopped and checked."""
    return {'t': 'ahead', 'ready': ready}


def state_reply(base, now, kept, holder, reason=None, dropped=None):
    """Session mode's part of the exit reply: the state the program started from and the one the
    next call starts from (ids, '' for empty), whether this call's state was kept, the holder's pid
    (0: none; the host's own kill of leftovers spares it), when a call that succeeded could not
    be kept, why (threads, processes, sockets), and when PID 1 gave up the state because its
    holder failed PID 1's check, why (`dropped`)."""
    info = {'from': base, 'now': now, 'kept': kept, 'holder': holder}
    if reason:
        info['reason'] = reason
    if dropped:
        info['dropped'] = dropped
    return info


def exit_reply(status, killed, limited, orphans, oom_before=None, oom_after=None, state=None, own_limit=False, preloading=()):
    """`status` is waitpid's (None: the child could not be reaped). `oomKilled` says whether the
    kernel killed the program for memory: it died of SIGKILL while the cgroup's OOM-kill counter
    rose. It is left out when the counter could not be read. `own_limit`: the program ended with
    a MemoryError at its own memory limit, which the model is told as an OOM kill. `preloading`:
    the modules the runner now starts over to preload (the host greets the next runner)."""
    code = sig = None
    if status is not None:
        if os.WIFEXITED(status):
            code = os.WEXITSTATUS(status)
        elif os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            code = 128 + sig
    reply = {'t': 'exit', 'exitCode': code, 'signal': sig, 'killed': killed, 'limited': limited, 'orphans': orphans}
    if oom_before is not None and oom_after is not None:
        reply['oomKilled'] = sig == _SIGKILL and oom_after > oom_before
    if own_limit and code:
        reply['oomKilled'] = True
    if state is not None:
        reply['state'] = state
    if preloading:
        reply['preloading'] = list(preloading)
    return reply


def is_run_dir(d):
    if not d.startswith(RUNS + '/'):
        return False
    name = d[len(RUNS) + 1:]
    digits, dash, rand = name.partition('-')
    return (
        dash == '-'
        and 4 <= len(digits) <= 9
        and digits.isdigit()
        and digits.isascii()
        and len(rand) == 6
        and all(c in '0123456789abcdef' for c in rand)
    )


def parse_run_request(payload):
    """key=value lines, a blank line, the program's bytes; None for anything else."""
    head, sep, code = payload.partition(b'\n\n')
    if not sep:
        return None
    req = {}
    for line in head.decode('ascii', 'replace').split('\n'):
        k, _, v = line.partition('=')
        req[k] = v
    try:
        d = req['dir']
        return {
            'dir': d,
            'code': code if req.get('code') == '1' else None,
            'max': int(req.get('max', '0')),
            'grace': int(req.get('grace', '1000')) / 1000.0,
            # Session mode: the program runs on the state the last kept call left (unless reset).
            'session': req.get('state') == 'session',
            'reset': req.get('reset') == '1',
        } if is_run_dir(d) else None
    except (KeyError, ValueError):
        return None


def proc_number(text, key):
    """N of a `Key:  N` or `Key:  N kB` line of /proc/meminfo or /proc/<pid>/status; None when absent."""
    for line in text.splitlines():
        k, _, v = line.partition(':')
        v = v.split()
        if k == key and v and v[0].isdigit():
            return int(v[0])
    return None


def own_limits(status, meminfo, tasks):
    """The soft RLIMIT_AS and RLIMIT_NPROC of a session program where the sandbox's memory is no
    cgroup of ours (gVisor: the host's OOM killer would end the whole sandbox, the state with it,
    where under runc it takes the program). RLIMIT_AS because gVisor 20221219 does not enforce
    RLIMIT_DATA; it counts address space, so the limit is what the program maps now (its copy of
    the state and of the preloaded modules, which cost nothing until written) plus what the
    sandbox has free, less the reserve and the exit room. RLIMIT_NPROC counts every task of the
    uid (threads too): the `tasks` there now, plus what the free memory pays for. `status` and
    `meminfo`: the texts of /proc/self/status and /proc/meminfo; None when they lack a field."""
    kb = (proc_number(status, 'VmSize'), proc_number(meminfo, 'MemTotal'), proc_number(meminfo, 'MemAvailable'))
    if None in kb:
        return None
    size, total, free = (n << 10 for n in kb)
    room = max(0, free - max(OWN_LIMIT_RESERVE, total >> 4))
    return size + max(0, room - OWN_LIMIT_EXIT_ROOM), tasks + min(OWN_PROCESS_CAP, room // OWN_PROCESS_COST)
