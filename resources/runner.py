# CodeAct Sandbox warm runner: PID 1 of a sandbox container. Standard library only.
#
# It does what the plain keeper does (sleep, reap orphans) and also runs programs fast: each run
# request makes it fork a child from this warm interpreter (data modules already imported), and
# the child becomes `python3 /sandbox/runs/<id>/program.py` as exactly as a fork can: argv,
# __main__, sys.path[0], cwd, cmdline, fds 0-2, signal dispositions; the file is run by CPython's
# own PyRun_SimpleFileExFlags, so compiling, tracebacks, sys.exit, excepthook, finalization
# (threads, atexit, flushing) and an unhandled KeyboardInterrupt behave as in `python3 file`.
#
# The channel is this process's stdin/stdout (the container's attach stream). Frames both ways:
#   b'CX' kind(1) flags(1) id(u32 BE) length(u32 BE) payload
# Host -> runner: h hello ("nonce=<hex>"), r run (key=value lines, a blank line, program bytes),
#   k kill (the run id in the header).
# Runner -> host: H hello, S started, O stdout bytes, E stderr bytes, X exit, D declined (JSON).
# Programs never see the channel: it is moved off fds 0/1, every child closes it, and this
# process is not dumpable, so /proc/1/fd is closed to them. Being PID 1, it cannot be killed from
# inside the container (the kernel drops signals to a namespace's init that it does not handle).
#
# Stage 0 (the container's command `python3 -c <this source> <config>`) hands this source and the
# config to stage 1 through a pipe on fd 3 and execs `python3 -c "import os;exec(os.read(3,1<<20))"`,
# whose argument area is exactly as long as `python3 /sandbox/runs/NNNN-xxxxxx/program.py`.
#
# Importing this file starts nothing (test/python does, for the frames and replies); it runs only
# as `python3 -c`, where __name__ is '__main__'. Sections, in order: frames and replies (pure);
# stage 0; interpreter internals (ctypes); preloading; the runner's loop; session state (a call
# that succeeded becomes the interpreter the next one is forked from); the child, which becomes
# the program and ends as `python3 file` ends (or, in session mode, becomes that state); main().
import os
import sys

# What a fresh `python3 file` has loaded, taken before this file imports anything of its own
# (stage 1's values are the ones used; stage 0 is replaced by an exec).
_BASE_MODULES = frozenset(sys.modules)
# The environment the runner started with: a restart goes back to it (see _stage0_exec).
_START_ENV = dict(os.environ)
_BUILTINS_COPY = dict(sys.modules['builtins'].__dict__)

import _signal  # noqa: E402  (loaded by the interpreter already: adds nothing to sys.modules)
import gc  # noqa: E402
import select  # noqa: E402
import time  # noqa: E402  (loaded by the interpreter already)

try:
    import ctypes  # noqa: E402
except ImportError:  # no libffi: the runner stays a keeper (see _Native)
    ctypes = None

PROTOCOL_VERSION = 1
RUNS = '/sandbox/runs'
MAGIC = b'CX'
HEADER = 12
HOST_KINDS = (b'h', b'r', b'k')
# The largest host frame read (a run request with its program); a longer one is skipped.
MAX_REQUEST = 4 * 1024 * 1024
# Output is read, and sent in O/E frames, at most this much at a time: the host's limit for them.
CHUNK = 65536
# The name (comm) of a child forked ahead while it waits for its run.
WAITING_NAME = b'codeact-waiting'
# How long a child that reported its exit may take to be gone before it is stopped (a legitimate
# exit() of a large process takes milliseconds; a program that faked the report is not exiting).
DYING_GRACE_S = 5

# Where the container's cgroup counts the processes the kernel killed for memory (v2, then v1).
OOM_COUNTERS = ('/sys/fs/cgroup/memory.events', '/sys/fs/cgroup/memory/memory.oom_control')
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
_SIGKILL = 9
_SIGCHLD = 17
_SIGCONT = 18
_SIGSTOP = 19
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


def state_reply(base, now, kept, holder, reason=None):
    """Session mode's part of the exit reply: the state the program started from and the one the
    next call starts from (ids, '' for empty), whether this call's state was kept, the holder's pid
    (0: none; the host's own kill of leftovers spares it) and, when a call that succeeded could not
    be kept, why (threads, processes, sockets)."""
    info = {'from': base, 'now': now, 'kept': kept, 'holder': holder}
    if reason:
        info['reason'] = reason
    return info


def exit_reply(status, killed, limited, orphans, oom_before=None, oom_after=None, state=None, own_limit=False):
    """`status` is waitpid's (None: the child could not be reaped). `oomKilled` says whether the
    kernel killed the program for memory: it died of SIGKILL while the cgroup's OOM-kill counter
    rose. It is left out when the counter could not be read. `own_limit`: the program ended with
    a MemoryError at its own memory limit, which the model is told as an OOM kill."""
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


def oom_kill_count(text):
    """The `oom_kill N` line of cgroup v2's memory.events or v1's memory.oom_control."""
    for line in text.splitlines():
        key, _, value = line.partition(' ')
        if key == 'oom_kill' and value.strip().isdigit():
            return int(value)
    return None


def read_oom_kills(paths=OOM_COUNTERS):
    """The container's OOM-kill count, or None where no cgroup file says it."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            text = os.read(fd, 4096).decode('ascii', 'replace')
        except OSError:
            continue
        finally:
            os.close(fd)
        n = oom_kill_count(text)
        if n is not None:
            return n
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


# ---------------------------------------------------------------------------------------------
# Stage 0.
def _stage0_exec(config, env=None):
    # The source is our own -c argument in stage 0 (/proc/self/cmdline has it on every Python
    # version); stage 1 keeps a copy to start over with.
    source = globals().get('_CODEACT_SOURCE')
    if source is None:
        with open('/proc/self/cmdline', 'rb') as f:
            source = f.read().split(b'\0')[2]
    payload = b''.join([
        b'_CODEACT_STAGE = 1\n_CODEACT_CONFIG = ', repr(config).encode(),
        b'\n_CODEACT_SOURCE = ', repr(source).encode(), b'\n', source,
    ])
    r, w = os.pipe()
    import fcntl  # the process is replaced below: this import leaves no trace

    fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ: the whole payload fits before anyone reads
    if len(payload) > (1 << 20) - 4096:
        raise SystemExit('runner source too large for the hand-over pipe')
    view = memoryview(payload)
    while view:
        view = view[os.write(w, view):]
    os.close(w)
    if r != 3:
        os.dup2(r, 3)
        os.close(r)
    else:
        os.set_inheritable(3, True)
    # A restart passes the environment the runner started with: a module that was not kept may
    # have changed os.environ (sklearn sets KMP_*), and exec would hand that to every program.
    if env is None:
        os.execv(sys.executable or '/usr/bin/python3', ['python3', '-c', _BOOT])
    os.execve(sys.executable or '/usr/bin/python3', ['python3', '-c', _BOOT], env)


# ---------------------------------------------------------------------------------------------
# Interpreter internals, through ctypes. _Native is required: without it nothing is safe to run
# here, and the runner stays a keeper that says why. The rest is optional and degrades: without
# the argument area a child's /proc/self/cmdline shows the runner's, without the recursion
# counter a program has a few frames less of depth (and the hello says so).
class _Native:
    """The libc and CPython entry points a child needs to become the program."""

    PR_SET_DUMPABLE = 4

    def __init__(self):
        if ctypes is None:
            raise ImportError('no module named ctypes')
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        libc.prctl.restype = ctypes.c_int
        libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        libc.fopen.restype = ctypes.c_void_p
        self.libc = libc
        # This process's name (comm): the interpreter's, which a child named while it waits takes back.
        try:
            with open('/proc/self/comm', 'rb') as f:
                self.name = f.read().rstrip(b'\n')
        except OSError:
            self.name = b'python3'
        # First of all: nobody but root may open /proc/1/fd (the channel), ptrace or read our memory.
        if not self.set_dumpable(False):
            raise OSError(ctypes.get_errno(), 'prctl(PR_SET_DUMPABLE, 0) failed')
        # The parser, compiler and evaluator `python3 file` uses (pyrun_file); the exception, if
        # any, comes back to us and is handled as PyErr_Print and Py_FinalizeEx would.
        pyrun = ctypes.pythonapi.PyRun_FileExFlags
        pyrun.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.py_object, ctypes.py_object, ctypes.c_int, ctypes.c_void_p]
        pyrun.restype = ctypes.py_object
        self.pyrun = pyrun
        libc.fflush.argtypes = [ctypes.c_void_p]
        libc.exit.argtypes = [ctypes.c_int]
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.mmap.restype = ctypes.c_void_p
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]

        class _CompilerFlags(ctypes.Structure):
            _fields_ = [('cf_flags', ctypes.c_int), ('cf_feature_version', ctypes.c_int)]

        self._cflags = _CompilerFlags(0, sys.version_info[1])
        self.cflags = ctypes.addressof(self._cflags)

    def set_dumpable(self, on):
        return self.libc.prctl(self.PR_SET_DUMPABLE, 1 if on else 0, 0, 0, 0) == 0

    PR_SET_NAME = 15

    def set_name(self, name):
        self.libc.prctl(self.PR_SET_NAME, ctypes.cast(ctypes.c_char_p(name), ctypes.c_void_p).value, 0, 0, 0)


class ExitNotice:
    """One run's shared page, where the child leaves its exit status just before it calls exit().

    A process's end costs more than its program: the C destructors of every library the runner
    preloaded, then the kernel freeing an address space of several hundred MB. None of it can be
    seen from the host, so the exit is reported once the child has flushed, written its status
    here and closed its stdout and stderr, instead of when the kernel has reaped it. What this
    gives up is output written by C-level atexit handlers (it has nowhere to go). A fresh page per
    run: processes left from earlier runs hold only their own. A page, not a pipe: the program
    must not find a descriptor `python3 file` would not have."""

    SIZE = 4096
    MAGIC = 0x43584954  # 'CXIT'

    def __init__(self, libc):
        self.libc = libc
        addr = libc.mmap(None, self.SIZE, 3, 0x01 | 0x20, -1, 0)  # PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS
        self.addr = None if addr in (None, ctypes.c_void_p(-1).value) else addr

    def status(self):
        """The wait status the child left, or None."""
        if self.addr is None or ctypes.c_uint32.from_address(self.addr).value != self.MAGIC:
            return None
        return (ctypes.c_uint32.from_address(self.addr + 4).value & 0xFF) << 8

    def close(self):
        if self.addr is not None:
            self.libc.munmap(self.addr, self.SIZE)
            self.addr = None


def _argv_area():
    """Where this process's argv strings live (arg_start, arg_end of /proc/self/stat): a child
    rewrites them so /proc/self/cmdline reads `python3\\0<path>\\0`, as for the plain path."""
    try:
        with open('/proc/self/stat', 'rb') as f:
            stat = f.read()
        fields = stat[stat.rindex(b')') + 2:].split()
        return int(fields[45]), int(fields[46])
    except (OSError, ValueError, IndexError):
        return None


class _RecursionDepth:
    """The program's module frame runs below a few of ours (stage 1's exec, this module, the call
    into PyRun_FileExFlags), so it would hit RecursionError a few calls earlier than under
    `python3 file`. The thread state's recursion counter is found (it is the int pair that follows
    sys.setrecursionlimit), and each child gets back exactly the depth a plain run has, measured
    once against a real `python3` here. The counter must be set in the frame that calls
    PyRun_FileExFlags, as the calibration does (a return would move it)."""

    PROBE = (
        b'import sys\n'
        b'def _d(n):\n'
        b'    try:\n'
        b'        return _d(n + 1)\n'
        b'    except RecursionError:\n'
        b'        return n\n'
        b'sys.stdout.write(str(_d(0)))\n'
    )

    def __init__(self, native):
        self.native = native
        self.field = None  # address of the remaining-depth counter in this thread's state
        self.target = None  # its value right before the program's module frame starts, as in a plain run

    def calibrate(self):
        """Finds and verifies the counter; returns why not, or None."""
        try:
            field = self._find_field()
            if field is None:
                return 'recursion counter not found'
            probe = '/sandbox/tmp/.codeact-depth-%d.py' % os.getpid()
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, self.PROBE)
            os.close(fd)
            try:
                plain = self._depth(probe.encode(), False)
                here = self._depth(probe.encode(), True, field)
                if plain is None or here is None:
                    return 'depth probe failed'
                target = here[0] + plain - here[1]
                again = self._depth(probe.encode(), True, field, target)
                if again is None or again[1] != plain:
                    return 'depth compensation did not verify (%s != %s)' % (again, plain)
                self.field, self.target = field, target
            finally:
                os.unlink(probe)
        except Exception as e:  # noqa: BLE001
            self.field, self.target = None, None
            return 'recursion calibration failed: %s' % e
        return None

    @staticmethod
    def _find_field():
        base = ctypes.pythonapi.PyThreadState_Get
        base.restype = ctypes.c_void_p
        addr = base()
        limit = sys.getrecursionlimit()
        ints = (ctypes.c_int * 32).from_address(addr)
        found = None
        for i in range(1, 32):
            if ints[i] == limit and 0 < ints[i - 1] < limit:
                sys.setrecursionlimit(limit + 7)
                ok = ints[i] == limit + 7
                sys.setrecursionlimit(limit)
                if ok and ints[i] == limit:
                    found = addr + 4 * (i - 1)
                    break
        return found

    def _depth(self, script_path, via_runner, field=None, target=None):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.dup2(w, 1)
                if via_runner:
                    native = self.native
                    counter = ctypes.c_int.from_address(field)
                    if target is not None:
                        counter.value = target
                    os.write(w, b'%d:' % counter.value)
                    fp = native.libc.fopen(script_path, b'rb')
                    g = {'__name__': '__main__', '__builtins__': sys.modules['builtins']}
                    native.pyrun(fp, script_path, 257, g, g, 1, native.cflags)
                    sys.stdout.flush()
                else:
                    os.execv(sys.executable or '/usr/bin/python3', ['python3', script_path.decode()])
            finally:
                os._exit(0)
        os.close(w)
        out = b''
        while True:
            chunk = os.read(r, 64)
            if not chunk:
                break
            out += chunk
        os.close(r)
        os.waitpid(pid, 0)
        if via_runner:
            before, _, depth = out.partition(b':')
            return (int(before), int(depth)) if before.isdigit() and depth.isdigit() else None
        return int(out) if out.isdigit() else None


# ---------------------------------------------------------------------------------------------
# Preloading. A module is kept only if importing it here is invisible to a program that does not
# import it: it printed nothing, started no thread, and left the environment, sys.path, the cwd,
# the umask, signal handlers, std streams, hooks and builtins as they were. Otherwise the runner
# starts over without it (stage 0 again), since an import cannot be undone.
_NON_INTERACTIVE = ('agg', 'cairo', 'pdf', 'pgf', 'ps', 'svg', 'template', 'module://matplotlib_inline.backend_inline')


def _snapshot():
    import builtins

    handlers = []
    for s in range(1, 65):
        try:
            handlers.append(_signal.getsignal(s))
        except (ValueError, OSError):
            handlers.append(None)
    mask = os.umask(0o022)
    os.umask(mask)
    warnings = sys.modules.get('warnings')
    return {
        'environ': dict(os.environ),
        'path': list(sys.path),
        'cwd': os.getcwd(),
        'umask': mask,
        'signals': handlers,
        'streams': (sys.stdin, sys.stdout, sys.stderr),
        'hooks': (sys.excepthook, sys.displayhook, sys.breakpointhook, sys.unraisablehook),
        'builtins': sorted(builtins.__dict__),
        'meta_path': list(sys.meta_path),
        'path_hooks': list(sys.path_hooks),
        'recursion': sys.getrecursionlimit(),
        'switch': sys.getswitchinterval(),
        'warnoptions': list(sys.warnoptions),
        'filters': list(warnings.filters) if warnings else [],
    }


def _threads():
    try:
        return len(os.listdir('/proc/self/task'))
    except OSError:
        return 1


def _fork_safe_threads():
    """True when the process is single-threaded at fork time: either it has no other thread, or
    its threads are a pool that shuts down before a fork (OpenBLAS does, and starts it again
    when it is next needed). A probe child is forked and our thread count checked after."""
    if _threads() == 1:
        return True
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return _threads() == 1


def _own_class(obj, extra):
    """True when obj's class comes from a module that a preload added: a program that does not
    import that module cannot meet it."""
    mod = getattr(type(obj) if not isinstance(obj, type) else obj, '__module__', '') or ''
    return mod.split('.')[0] in extra


def _passive_finder(finder):
    """A meta path finder that answers only for its own names (six's does, for six.moves)."""
    try:
        return all(finder.find_spec(n, None) is None for n in ('json', 'csv', 'codeact_probe_absent'))
    except Exception:  # noqa: BLE001
        return False


def _difference(before, after, extra):
    for key in ('environ', 'path', 'cwd', 'umask', 'signals', 'builtins', 'recursion', 'switch', 'warnoptions', 'path_hooks'):
        a, b = before[key], after[key]
        if key == 'path_hooks':
            if len(a) != len(b) or any(x is not y for x, y in zip(a, b)):
                return key
        elif a != b:
            return key
    for key in ('streams', 'hooks'):
        a, b = before[key], after[key]
        if any(x is not y for x, y in zip(a, b)):
            return key
    old_meta, new_meta = before['meta_path'], after['meta_path']
    if any(all(m is not n for n in new_meta) for m in old_meta):
        return 'meta_path'
    for m in new_meta:
        if all(m is not o for o in old_meta) and not (_own_class(m, extra) and _passive_finder(m)):
            return 'meta_path'
    # A module may add warning filters that only silence warnings (numpy does, for messages about
    # its own ABI), or that concern its own warning classes; anything else is a change.
    old, new = before['filters'], after['filters']
    if any(f not in new for f in old):
        return 'warnings.filters'
    for f in new:
        if f not in old and f[0] != 'ignore' and not _own_class(f[2], extra):
            return 'warnings.filters'
    if not _fork_safe_threads():
        return 'threads'
    return None


def _extra_modules():
    """Top-level names of the modules loaded here that a fresh `python3 file` would not have."""
    return {m.split('.')[0] for m in set(sys.modules) - _BASE_MODULES}


_EOPNOTSUPP = 95  # Linux's number; the errno module is not imported here (one module fewer to shadow)


def _unnamed_file(directory):
    """A file in `directory` that no name reaches. gVisor refuses O_TMPFILE on a mounted directory
    (EOPNOTSUPP): there the file gets a random name that is removed at once."""
    try:
        return os.open(directory, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except OSError as e:
        if e.errno != _EOPNOTSUPP:
            raise
    path = os.path.join(directory, '.capture-%s' % os.urandom(8).hex())
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    os.unlink(path)
    return fd


def _preload(names, capture_dir='/sandbox/tmp'):
    """Imports `names` in order; returns (preloaded, missing, dirty), dirty being the first module
    that was not invisible (the runner then starts over without it). What the imports print
    goes to an unnamed file in `capture_dir`."""
    preloaded, missing, dirty = [], [], []
    if not names:
        return preloaded, missing, dirty
    try:
        capture = _unnamed_file(capture_dir)
    except OSError as e:
        _log('cannot capture import output (%s); not preloading' % e)
        return preloaded, list(names), dirty
    saved = os.dup(1), os.dup(2)
    try:
        for name in names:
            if name.split('.')[0] == 'matplotlib' and os.environ.get('MPLBACKEND', '').lower() not in _NON_INTERACTIVE:
                missing.append(name)  # would pick an interactive backend: leave it to the program
                continue
            before = _snapshot()
            os.dup2(capture, 1)
            os.dup2(capture, 2)
            try:
                __import__(name)
                failure = None
            except ModuleNotFoundError as e:
                failure = 'missing' if e.name and (name == e.name or name.startswith(e.name + '.')) else 'error'
            except BaseException as e:  # noqa: BLE001 - a broken install must not break the runner
                failure = 'error: %s' % type(e).__name__
            finally:
                # A print() at import time may still sit in sys.stdout's buffer: into the capture
                # with it, or every child would print it when its own output is flushed.
                _flush_io()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
            if failure == 'missing':
                missing.append(name)
                continue
            reason = failure or _difference(before, _snapshot(), _extra_modules())
            if not reason and os.fstat(capture).st_size:
                reason = 'printed output'
            if reason:
                dirty.append('%s(%s)' % (name, reason))
                return preloaded, missing, dirty
            preloaded.append(name)
    finally:
        os.close(saved[0])
        os.close(saved[1])
        os.close(capture)
    return preloaded, missing, dirty


def _open_fds():
    fds = set()
    for fd in os.listdir('/proc/self/fd'):
        try:
            os.fstat(int(fd))
            fds.add(int(fd))
        except OSError:
            pass
    return fds


# ---------------------------------------------------------------------------------------------
# The runner's loop.
class Channel:
    """The host's end: the container's attach stream, moved off fds 0/1."""

    def __init__(self, fd_in, fd_out):
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.reader = FrameReader()
        self.closed = False

    def send(self, kind, rid, payload):
        data = memoryview(encode_frame(kind, rid, payload))
        while data:
            try:
                data = data[os.write(self.fd_out, data):]
            except InterruptedError:
                continue
            except BrokenPipeError:
                return

    def feed(self):
        try:
            data = os.read(self.fd_in, CHUNK)
        except (InterruptedError, BlockingIOError):
            return
        if not data:
            self.closed = True
        self.reader.push(data)

    def frames(self):
        return self.reader.frames()


_MODULE_SUFFIXES = ('.py', '.pyc', '.pyw', '.so', '.pyd')


def _shadowing(d, extra):
    """Why the program could see a difference here: a file next to it that a fresh interpreter
    would import instead of an already-loaded module, or a matplotlibrc a fresh import would read."""
    try:
        names = os.listdir(d)
    except OSError as e:
        return 'cannot list the run directory (%s)' % e.strerror
    for n in names:
        if n == 'matplotlibrc' and 'matplotlib' in extra:
            return 'matplotlibrc'
        base = n
        for suffix in _MODULE_SUFFIXES:
            if n.endswith(suffix):
                base = n[: -len(suffix)].split('.')[0]
                break
        if base in extra:
            return 'shadows %s' % base
    return None


def _stale_paths(extra):
    """Import-time inputs that a later fresh import would read (a program may change them)."""
    paths = []
    home = os.environ.get('HOME')
    if home and not sys.flags.no_user_site:
        v = '%d.%d' % sys.version_info[:2]
        paths.append(os.path.join(home, '.local', 'lib', 'python' + v, 'site-packages'))
    mpl = os.environ.get('MPLCONFIGDIR')
    if mpl and 'matplotlib' in extra:
        paths.append(os.path.join(mpl, 'matplotlibrc'))
    return paths


def _stat_key(path):
    try:
        st = os.stat(path)
        return st.st_ino, st.st_mtime_ns
    except OSError:
        return None


def _write_program(d, code):
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        return 'exists'
    except OSError as e:
        return 'mkdir: %s' % e.strerror
    path = d + '/program.py'
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(code)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    except OSError as e:
        try:
            os.unlink(path)
        except OSError:
            pass
        try:
            os.rmdir(d)
        except OSError:
            pass
        return 'nospace' if e.errno == 28 else 'write: %s' % e.strerror
    return None


def _proc_status(pid):
    """(state letter, real uid) from /proc/<pid>/status (b'Z' for a zombie), None when it is gone.
    Its Uid line is the process's own even where it is not dumpable (the directory is root's then)."""
    try:
        fd = os.open('/proc/%d/status' % pid, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        text = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    state = uid = None
    for line in text.split(b'\n'):
        if line.startswith(b'State:'):
            state = line[6:].strip()[:1]
        elif line.startswith(b'Uid:'):
            fields = line[4:].split()
            uid = int(fields[0]) if fields and fields[0].isdigit() else None
    return (state, uid) if state is not None and uid is not None else None


def _live_pids():
    """Every process of our uid that is not yet dead (zombies cannot do anything): what kill(-1)
    reaches. Others (the host's lock holder runs as root) are not a program's to leave or ours to kill."""
    try:
        names = os.listdir('/proc')
    except OSError:
        return []
    uid = os.getuid()
    pids = []
    for n in names:
        if n.isdigit():
            st = _proc_status(int(n))
            if st is not None and st[1] == uid and st[0] not in (b'Z', b'X', b'x'):
                pids.append(int(n))
    return pids


def _kill_all(pid, spare=()):
    """The program's group, then every other process of ours (those that left the group); PID 1
    is never hit by kill(-1). `spare`: state holders, which kill(-1) would take too (same uid):
    then everything is stopped first (a stopped process cannot fork, so a fork bomb cannot outrun
    the loop), and each process but PID 1 and the holders is killed until no other is left."""
    try:
        os.killpg(pid, _SIGKILL)
    except OSError:
        pass
    if not spare:
        try:
            os.kill(-1, _SIGKILL)
        except OSError:
            pass
        return
    try:
        os.kill(-1, _SIGSTOP)
    except OSError:
        pass
    me = os.getpid()
    # Bounded: a process stuck in the kernel (uninterruptible sleep) dies when it comes out, and
    # PID 1 must not hang on it (supervise gives up on such a kill after 5 s as well).
    give_up = time.monotonic() + 3
    while time.monotonic() < give_up:
        others = [p for p in _live_pids() if p != 1 and p != me and p not in spare]
        if not others:
            break
        for p in others:
            try:
                os.kill(p, _SIGKILL)
            except OSError:
                pass
    for p in spare:
        try:
            os.kill(p, _SIGCONT)
        except OSError:
            pass


def _on_sigchld(_signum, _frame):
    pass


class Runner:
    """PID 1 once set up: answers hellos, runs each program in a forked child, reaps orphans."""

    def __init__(self, channel, unusable, preloaded, missing, noted_dirty, extra, own_fds):
        self.channel = channel
        self.unusable = unusable
        self.problem = None  # why programs run a little differently here (the hello says it)
        self.preloaded = preloaded
        self.missing = missing
        self.noted_dirty = noted_dirty
        self.extra = extra
        self.pending_hellos = []
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        # Descriptors every child closes, whatever a preloaded module keeps open.
        self.own_fds = set(own_fds) | {channel.fd_in, channel.fd_out, self.wake_r, self.wake_w}
        if not unusable:
            _signal.signal(_SIGCHLD, _on_sigchld)
            _signal.siginterrupt(_SIGCHLD, False)
            _signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        self.stale_paths = _stale_paths(extra)
        self.native = None  # set by main() when the runner is usable
        self._loaded = None
        self._loaded_len = 0
        self.waiting = None  # the child forked ahead for the next fresh run
        # Children that reported their exit and are still in exit(), with the time they must be gone by.
        self.exiting = {}
        self.stale_state = {p: _stat_key(p) for p in self.stale_paths}
        # Session mode's state holder, {'pid', 'sock', 'id'}: the interpreter the next session call
        # is forked from. None: the next one starts from an empty state.
        self.state = None
        # Holders killed and not yet reaped: a large one takes a moment to go, and a program must
        # not be told it left them running.
        self.dying = set()

    def spared(self):
        return (self.state['pid'],) if self.state else ()

    def not_the_programs(self):
        """The processes a session program may find running that are not its doing."""
        return self.spared() + tuple(self.dying) + tuple(self.exiting)

    def drop_state(self):
        """Lets the holder go (a fresh call, a holder that failed): its memory goes back to the sandbox."""
        st, self.state = self.state, None
        if st is not None:
            self.kill_holder(st)

    def kill_holder(self, st):
        """Ends a holder that is no longer the state; it counts as dying until it is reaped."""
        self.own_fds.discard(st['sock'].fileno())
        self.dying.add(st['pid'])
        try:
            os.kill(st['pid'], _SIGKILL)
        except OSError:
            pass
        st['sock'].close()

    def await_start(self, link):
        """The pid of the program a holder forked, as the program reports it; None when it does not."""
        poller = select.poll()
        poller.register(link.fileno(), select.POLLIN)
        deadline = time.monotonic() + HOLDER_START_SECONDS
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                ready = poller.poll(int(left * 1000) + 1)
            except InterruptedError:
                continue
            if ready:
                data, _fds = _recv(link)
                return int(data[1:]) if data[:1] == b'S' and data[1:].isdigit() else None

    def hello(self, payload):
        nonce = hello_nonce(payload)
        python = '%d.%d.%d' % sys.version_info[:3]
        reply = hello_reply(nonce, os.getpid(), python, self.unusable, self.problem, self.preloaded, self.missing, self.noted_dirty)
        self.channel.send(b'H', 0, reply)

    def reap(self, watch):
        """Reaps every finished child (we are PID 1: orphans are ours); returns the status of `watch`."""
        try:
            while os.read(self.wake_r, 4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        found = None
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            except InterruptedError:
                continue
            if pid == 0:
                break
            self.exiting.pop(pid, None)
            if self.waiting is not None and pid == self.waiting['pid']:
                self.drop_waiting()
            if pid == watch:
                found = status
            self.dying.discard(pid)
            if self.state and pid == self.state['pid']:
                # The holder died (the OOM killer, a program's signal): its state is gone, and the
                # next session call says so (it starts from an empty state).
                _log('the state holder died; its state is gone')
                self.own_fds.discard(self.state['sock'].fileno())
                self.state['sock'].close()
                self.state = None
        return found

    def kill_overdue(self):
        """A child that reported its exit but is still there is not exiting: it is stopped. Returns
        the poll timeout (ms) until the next deadline, or None."""
        if not self.exiting:
            return None
        now = time.monotonic()
        for pid, deadline in list(self.exiting.items()):
            if now >= deadline:
                del self.exiting[pid]
                _log('run child %d reported its exit %.0f s ago and is still there; stopping it' % (pid, DYING_GRACE_S))
                for kill in (os.killpg, os.kill):
                    try:
                        kill(pid, _SIGKILL)
                    except OSError:
                        pass
        if not self.exiting:
            return None
        return max(1, int((min(self.exiting.values()) - now) * 1000) + 1)

    def fork_ahead(self):
        """Forks the child for the next fresh run now, while the host is quiet: a fork of this
        interpreter is the largest part of a warm call (a few ms on runc, about 100 ms under gVisor).
        The child does what does not depend on the run, then waits, not dumpable, for its run's
        directory. Returns the child's spec in the child; None here."""
        if self.waiting is not None or self.native is None or self.state is not None:
            return None
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        ctl_r, ctl_w = os.pipe()
        notice = ExitNotice(self.native.libc)
        mods = self.loaded_modules()
        try:
            pid = os.fork()
        except OSError as e:
            for fd in (out_r, out_w, err_r, err_w, ctl_r, ctl_w):
                os.close(fd)
            notice.close()
            _log('cannot fork ahead: %s' % e.strerror)
            return None
        if pid == 0:
            os.close(ctl_w)
            return (None, out_w, err_w, notice.addr, mods, None, (), ctl_r)
        for fd in (out_w, err_w, ctl_r):
            os.close(fd)
        self.waiting = {'pid': pid, 'ctl': ctl_w, 'out_r': out_r, 'err_r': err_r, 'notice': notice}
        return None

    def take_waiting(self, d):
        """Hands a fresh run to the child forked ahead: (pid, out_r, err_r, notice), or None."""
        w = self.waiting
        if w is None:
            return None
        try:
            os.write(w['ctl'], d.encode() + b'\n')
        except OSError:
            self.drop_waiting()
            return None
        self.waiting = None
        os.close(w['ctl'])
        return w['pid'], w['out_r'], w['err_r'], w['notice']

    def drop_waiting(self):
        """Lets the child forked ahead go (it died, or a session run needs the sandbox to itself)."""
        w, self.waiting = self.waiting, None
        if w is None:
            return
        for fd in (w['ctl'], w['out_r'], w['err_r']):
            try:
                os.close(fd)
            except OSError:
                pass
        w['notice'].close()
        self.dying.add(w['pid'])  # not something a session program left, until it is reaped
        try:
            os.kill(w['pid'], _SIGKILL)
        except OSError:
            pass

    def await_exits(self):
        """Waits until the children that reported their exit early are gone (stopping those past
        their grace), so that a program never finds its predecessor still in /proc."""
        poller = None
        while self.exiting:
            timeout = self.kill_overdue()
            self.reap(None)
            if not self.exiting:
                break
            if poller is None:
                poller = select.poll()
                poller.register(self.wake_r, select.POLLIN)
            try:
                poller.poll(timeout)
            except InterruptedError:
                pass
            self.reap(None)

    def loaded_modules(self):
        """The modules a child starts with, taken here rather than in every child: building the set
        touches every module name, and each page touched after a fork is a copy-on-write fault
        (2.4 ms of a warm call on runc, 25 ms under gVisor, measured in the data image)."""
        if self._loaded is None or len(sys.modules) != self._loaded_len:
            self._loaded_len = len(sys.modules)
            self._loaded = frozenset(sys.modules)
        return self._loaded

    def stale(self):
        """Import-time inputs that changed since preloading (a later fresh import would see them)."""
        for p in self.stale_paths:
            if _stat_key(p) != self.stale_state.get(p):
                return 'changed: %s' % p
        return None

    def serve(self):
        """The runner's loop. Returns only in a forked child, with what it needs to become the program."""
        poller = select.poll()
        poller.register(self.channel.fd_in, select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        child = self.fork_ahead()
        if child is not None:
            return child
        while True:
            while self.pending_hellos:
                self.hello(self.pending_hellos.pop(0))
            try:
                events = poller.poll(self.kill_overdue())
            except InterruptedError:
                continue
            for fd, _ev in events:
                if fd == self.wake_r:
                    self.reap(None)
                elif fd == self.channel.fd_in:
                    self.channel.feed()
                    if self.channel.closed:
                        # No host can reach us any more; go on reaping orphans like the keeper.
                        poller.unregister(self.channel.fd_in)
            # Lazily, one frame at a time: a kill sent right behind a run must stay in the buffer
            # for that run's supervisor to see, not be consumed (and dropped) here.
            for kind, rid, payload in self.channel.frames():
                if kind == b'h':
                    self.hello(payload)
                elif kind == b'r':
                    req = parse_run_request(payload)
                    if req is None:
                        self.channel.send(b'D', rid, declined_reply('invalid request', False))
                        continue
                    child = self.run(rid, req, poller)
                    if child is not None:
                        return child
                    self.reap(None)

    def serve_unusable(self):
        """Nothing is safe to run here. Answers hellos (so the host stops waiting) and reaps orphans."""
        poller = select.poll()
        poller.register(self.channel.fd_in, select.POLLIN)
        while True:
            try:
                for _fd, _ev in poller.poll(1000):
                    self.channel.feed()
                    if self.channel.closed:
                        poller.unregister(self.channel.fd_in)
                    for kind, rid, payload in list(self.channel.frames()):
                        if kind == b'h':
                            self.hello(payload)
                        elif kind == b'r':
                            self.channel.send(b'D', rid, declined_reply(self.unusable, False))
            except InterruptedError:
                pass
            try:
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                pass

    def run(self, rid, req, poller):
        """Runs one program in a forked child. Returns the child's spec in the child; None in the runner."""
        d = req['dir']
        session = req['session']
        if not session:
            self.drop_state()
        if req['code'] is not None:
            problem = _write_program(d, req['code'])
            if problem:
                self.channel.send(b'D', rid, declined_reply(problem, False))
                return None
        # Only fresh mode must be indistinguishable from `python3 file`; a session's interpreter
        # keeps what earlier calls imported, as a notebook's kernel does.
        why = None if session else self.stale() or _shadowing(d, self.extra)
        if why:
            self.channel.send(b'D', rid, declined_reply(why, True))
            return None
        self.await_exits()
        oom_before = read_oom_kills()
        if session:
            # A session program must find no process it did not start (see Program.hold).
            self.drop_waiting()
        else:
            taken = self.take_waiting(d)
            if taken is not None:
                pid, out_r, err_r, notice = taken
                return self.started(rid, req, pid, out_r, err_r, poller, oom_before, None, '', notice)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        link = theirs = None
        if session:
            link, theirs = _link_pair()
        pid = None
        base = ''
        notice = None
        if session and self.state and not req['reset']:
            st = self.state
            msg = ('F%s\n%s' % (d, ','.join(str(p) for p in self.not_the_programs()))).encode()
            if _send(st['sock'], msg, (out_w, err_w, theirs.fileno())):
                pid = self.await_start(link)
            if pid is None:
                _log('the state holder did not start the program; its state is given up')
                self.drop_state()
                try:
                    os.kill(-1, _SIGKILL)  # whatever it may have started
                except OSError:
                    pass
                link.close()
                theirs.close()
                link, theirs = _link_pair()
            else:
                base = st['id']
        if pid is None:
            # Fresh mode only: a session program's end is told over its link (kept or not).
            if not session:
                notice = ExitNotice(self.native.libc)
            try:
                pid = os.fork()
            except OSError as e:
                for fd in (out_r, out_w, err_r, err_w):
                    os.close(fd)
                if notice is not None:
                    notice.close()
                if session:
                    link.close()
                    theirs.close()
                self.channel.send(b'D', rid, declined_reply('fork: %s' % e.strerror, True))
                return None
            if pid == 0:
                if not session:
                    return (d, out_w, err_w, notice.addr, self.loaded_modules(), None, (), None)
                # Our sockets' fds are closed by become(); detached first, so that no object of
                # ours closes the same number again later, when the program may be using it.
                link.detach()
                if self.state:
                    self.state['sock'].detach()
                return (d, out_w, err_w, None, self.loaded_modules(), theirs, self.not_the_programs(), None)
        os.close(out_w)
        os.close(err_w)
        if theirs is not None:
            theirs.close()
        return self.started(rid, req, pid, out_r, err_r, poller, oom_before, link, base, notice)

    def started(self, rid, req, pid, out_r, err_r, poller, oom_before, link, base, notice):
        """A run whose program is under way: says so, supervises it, then forks the next child
        ahead (fresh mode). Returns that child's spec in the child; None here."""
        self.channel.send(b'S', rid, started_reply(pid))
        try:
            self.supervise(rid, req, pid, out_r, err_r, poller, oom_before, link, base, notice)
        finally:
            if notice is not None:
                notice.close()
        return None if req['session'] else self.fork_ahead()

    def supervise(self, rid, req, pid, out_r, err_r, poller, oom_before, link=None, base='', notice=None):
        """Streams the program's output, enforces the backstop, kills on a k frame, reports its
        end. `link`: a session program's, over which it says it is kept (K: it is now a holder,
        and counts as exited 0) or why it cannot be (N). `notice`: a fresh program's exit notice."""
        channel = self.channel
        streams = {out_r: b'O', err_r: b'E'}
        for fd in streams:
            poller.register(fd, select.POLLIN)
        status = None
        killed = limited = orphans = False
        kept = False
        unkept = None
        own_oom = False
        link_fd = None
        if link is not None:
            link_fd = link.fileno()
            poller.register(link_fd, select.POLLIN)
        total = 0
        exited_at = kill_at = None
        limit = req['max']

        def kill():
            nonlocal kill_at
            if kill_at is None:
                kill_at = time.monotonic()
                _kill_all(pid, self.spared())

        def handle_input():
            nonlocal killed
            for kind, frid, payload in channel.frames():
                if kind == b'k' and frid == rid:
                    killed = True
                    kill()
                elif kind == b'h':
                    # A new host attached: the one that started this run is gone.
                    killed = True
                    kill()
                    self.pending_hellos.append(payload)

        # Frames that arrived together with the run request (a kill sent at once) are already buffered.
        handle_input()

        while True:
            reaped = self.reap(pid)
            now = time.monotonic()
            if status is None and reaped is not None:
                status = reaped
                exited_at = now
            if status is None and not streams and kill_at is None and notice is not None:
                status = notice.status()
                if status is not None:
                    # Told, not reaped: the child is in exit(). It has this long to be gone.
                    exited_at = now
                    self.exiting[pid] = now + DYING_GRACE_S
            if status is not None and not streams:
                break
            if kill_at is not None and now - kill_at > 5:
                break  # what we killed does not go away (uninterruptible sleep?): report what we have
            if status is not None and kill_at is None:
                left = exited_at + req['grace'] - now
                if left <= 0:
                    # The program is gone but something it started still holds its output.
                    orphans = True
                    kill()
                    timeout = 50
                else:
                    timeout = int(left * 1000) + 1
            elif kill_at is not None:
                timeout = 50
            else:
                timeout = None
            try:
                events = poller.poll(timeout)
            except InterruptedError:
                continue
            for fd, _ev in events:
                if fd == self.wake_r:
                    continue  # reaped at the top of the loop
                if fd == link_fd:
                    data, _fds = _recv(link)
                    if data == b'K' and status is None:
                        kept = True
                        status = 0  # as waitpid says exit 0
                        exited_at = time.monotonic()
                    elif data[:1] == b'N':
                        unkept = data[1:41].decode('ascii', 'replace')
                    elif data == b'M':
                        own_oom = True  # it ends with MemoryError at its own limit
                    if data[:1] not in (b'N', b'M'):
                        # Kept, or the program is gone: nothing more comes this call.
                        poller.unregister(link_fd)
                        link_fd = None
                    continue
                if fd == channel.fd_in:
                    channel.feed()
                    if channel.closed:
                        poller.unregister(channel.fd_in)
                    handle_input()
                    continue
                kind = streams.get(fd)
                if kind is None:
                    continue
                try:
                    data = os.read(fd, CHUNK)
                except InterruptedError:
                    continue
                except OSError:
                    data = b''
                if not data:
                    poller.unregister(fd)
                    os.close(fd)
                    del streams[fd]
                    continue
                if limited:
                    continue
                total += len(data)
                channel.send(kind, rid, data)
                if limit and total > limit:
                    limited = True
                    kill()
        for fd in list(streams):
            poller.unregister(fd)
            os.close(fd)
        if link_fd is not None:
            poller.unregister(link_fd)
        state = None
        if link is not None:
            state = self.commit(pid, link, base, kept and not (killed or limited or orphans or kill_at), status, unkept)
        # The kernel counts an OOM kill before it sends the SIGKILL: a reaped child's is in.
        channel.send(b'X', rid, exit_reply(status, killed, limited, orphans, oom_before, read_oom_kills(), state, own_oom and not kept))

    def commit(self, pid, link, base, keep, status, unkept):
        """The end of a session call: the program that is now a holder replaces the previous one
        (killed only now), or, when the call did not succeed, the previous holder stays."""
        if keep:
            old = self.state
            self.state = {'pid': pid, 'sock': link, 'id': os.urandom(4).hex()}
            self.own_fds.add(link.fileno())
            if old is not None:
                self.kill_holder(old)
        else:
            # Nothing a call that is not kept started may outlive it: it would make every later
            # call unkeepable (processes), and the state is to be as the last kept call left it.
            _kill_all(pid, self.spared())
            link.close()
            if status == 0 and unkept is None:
                unkept = 'link'  # exited 0 without saying it was kept (it closed its link)
        now, holder = (self.state['id'], self.state['pid']) if self.state else ('', 0)
        return state_reply(base, now, keep, holder, None if keep or status != 0 else unkept)


# ---------------------------------------------------------------------------------------------
# Session state. A session-mode program that succeeded (exit 0) does not end: it becomes the
# state holder, the interpreter the chat's next call is forked from (copy-on-write), and the
# holder before it is killed only once the new one is in place. A call that fails simply dies,
# and the holder it was forked from is still there: a call commits all of its state or none of
# it, and no object is ever serialized. PID 1 and a holder talk over an AF_UNIX seqpacket pair:
# PID 1 passes the next program's output pipes and link (SCM_RIGHTS); the holder forks twice, so
# the program is PID 1's child, and supervise streams, kills, reaps and reports it exactly as one
# it forked itself (a holder that reported statuses instead would be one more thing to trust).
_sock = None
# Whether session programs get limits of their own (main() decides; see own_limits).
_OWN_LIMIT = False


def _socket_module():
    """_socket, imported at the first session run: a fresh sandbox's programs never see it."""
    global _sock
    if _sock is None:
        had = '_socket' in sys.modules
        import _socket

        if not had:
            del sys.modules['_socket']
        _sock = _socket
    return _sock


def _link_pair():
    s = _socket_module()
    return s.socketpair(s.AF_UNIX, s.SOCK_SEQPACKET)


def _send(sock, data, fds=()):
    s = _sock
    anc = [(s.SOL_SOCKET, s.SCM_RIGHTS, b''.join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds))] if fds else []
    try:
        sock.sendmsg([data], anc)
        return True
    except OSError:
        return False


def _recv(sock, nfds=0):
    """(message, fds); b'' once the other end is gone."""
    s = _sock
    try:
        data, anc, _flags, _addr = sock.recvmsg(4096, s.CMSG_SPACE(4 * nfds) if nfds else 0)
    except OSError:
        return b'', []
    fds = []
    for level, kind, blob in anc:
        if level == s.SOL_SOCKET and kind == s.SCM_RIGHTS:
            fds.extend(int.from_bytes(blob[i:i + 4], sys.byteorder, signed=True) for i in range(0, len(blob) - 3, 4))
    return data, fds


def _rlimit(libc, which, soft=None):
    """A soft limit, after setting it to `soft` if given (never above the hard one); None when
    libc refuses."""
    lim = (ctypes.c_ulong * 2)()
    if libc.getrlimit(which, lim) != 0:
        return None
    if soft is not None:
        lim[0] = min(soft, lim[1])
        if libc.setrlimit(which, lim) != 0:
            return None
    return lim[0]


def _tasks():
    """The tasks (threads) of the sandbox's processes, as RLIMIT_NPROC counts them."""
    n = 0
    for p in os.listdir('/proc'):
        if p.isdigit():
            try:
                with open('/proc/%s/status' % p, 'rb') as f:
                    n += proc_number(f.read().decode('ascii', 'replace'), 'Threads') or 1
            except OSError:
                pass
    return n


def _oom_adj(value=None):
    """Reads (value None) or sets this process's oom_score_adj; None when /proc refuses. A program
    raises its own to the maximum so that the kernel picks it, not a holder that may be larger;
    a holder sets back the value it had (allowed down to the floor the engine set)."""
    try:
        if value is None:
            fd = os.open('/proc/self/oom_score_adj', os.O_RDONLY | os.O_CLOEXEC)
            try:
                return int(os.read(fd, 32).strip() or b'0')
            finally:
                os.close(fd)
        fd = os.open('/proc/self/oom_score_adj', os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, b'%d' % value)
        finally:
            os.close(fd)
        return value
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------
# The child. It becomes `python3 <dir>/program.py` as seen from inside, runs the file (at this
# file's module level, see the end), and ends as `python3 file` ends: PyErr_Print for an
# exception that escaped, then Py_FinalizeEx (threads, atexit, flushing, the program's modules
# torn down in CPython's order), then exit(). Only the teardown of what was preloaded is skipped:
# it is what made exiting cost a tenth of a second, and nothing of the program's lives there.
def _unraisable_type():
    seen = []
    hook = sys.unraisablehook
    sys.unraisablehook = seen.append

    class _Probe:
        def __del__(self):
            raise RuntimeError

    _Probe()
    sys.unraisablehook = hook
    return type(seen[0]) if seen else None


def _write_stderr(text):
    err = getattr(sys, 'stderr', None)
    if err is not None:
        try:
            err.write(text)
            return
        except Exception:  # noqa: BLE001
            pass
    try:
        os.write(2, text.encode('utf-8', 'backslashreplace'))
    except OSError:
        pass


def _flush_io():
    for name in ('stderr', 'stdout'):
        f = getattr(sys, name, None)
        if f is not None:
            try:
                f.flush()
            except Exception:  # noqa: BLE001
                pass


def _exit_status(value):
    """_Py_HandleSystemExit: the code of a SystemExit (printed when it is not an int)."""
    code = getattr(value, 'code', value)
    if code is None:
        return 0
    if isinstance(code, int):
        try:
            return ctypes.c_int(ctypes.c_long(code).value).value
        except OverflowError:
            return -1
    err = getattr(sys, 'stderr', None)
    if err is not None:
        try:
            err.write(str(code))
        except Exception:  # noqa: BLE001
            pass
    else:
        _write_stderr(str(code))
    _write_stderr('\n')
    return 1


class _Exit(Exception):
    def __init__(self, status):
        self.status = status


def _module_clear(d):
    for key in list(d):
        if isinstance(key, str) and key[:1] == '_' and key[1:2] != '_' and d.get(key) is not None:
            d[key] = None
    for key in list(d):
        if isinstance(key, str) and key != '__builtins__' and d.get(key) is not None:
            d[key] = None


class Program:
    """In a forked child: what it takes from the runner to become the program, and its end."""

    def __init__(self, spec, native, depth, keep_fds, own_fds, argv_area, path_tail, hook_args_type):
        # `exit_notice`: a fresh program's shared page for its exit status (None in session mode);
        # `fork_modules`: what it starts with; `ctl`: a session program's link to PID 1 (None in
        # fresh mode); `spare`: the holder it may leave running (the one it was forked from), for
        # the check of what it left.
        # `wait_fd`: a child forked ahead reads its run's directory there (None: it has it already).
        self.dir, self.out_w, self.err_w, self.exit_notice, self.fork_modules, self.ctl, self.spare, self.wait_fd = spec
        self.adj = None
        # The program's own memory limit (soft RLIMIT_AS), None where it has none; the soft limits
        # it replaced, for a holder to set back.
        self.own_limit = None
        self.limits_before = ()
        self.out_pipes = ()
        self.native = native
        self.depth = depth
        self.keep_fds = keep_fds
        self.own_fds = own_fds
        self.argv_area = argv_area
        self.path_tail = path_tail
        self.hook_args_type = hook_args_type
        self.path = None if self.dir is None else (self.dir + '/program.py').encode()

    def become(self):
        """Turns this process into `python3 <dir>/program.py` as seen from inside. A child forked
        ahead does what does not depend on the run first, then waits for its directory."""
        os.setsid()
        null = os.open('/dev/null', os.O_RDONLY)
        os.dup2(null, 0, inheritable=True)
        os.dup2(self.out_w, 1, inheritable=True)
        os.dup2(self.err_w, 2, inheritable=True)
        ctl = self.ctl.fileno() if self.ctl is not None else -1
        for fd in os.listdir('/proc/self/fd'):
            fd = int(fd)
            if fd > 2 and fd != ctl and fd != self.wait_fd and (fd not in self.keep_fds or fd in self.own_fds):
                try:
                    os.close(fd)
                except OSError:
                    pass
        _signal.set_wakeup_fd(-1)
        _signal.signal(_SIGCHLD, _signal.SIG_DFL)
        # A fresh interpreter seeds numpy's global generator from the OS; a fork would repeat ours.
        # (`random` reseeds itself after fork.)
        np_random = sys.modules.get('numpy.random')
        if np_random is not None:
            np_random.seed()
        if self.wait_fd is not None:
            # Named while it waits, so that whoever counts the sandbox's processes can tell it from
            # a program (comm is the name `ps` shows); a program has the interpreter's name.
            self.native.set_name(WAITING_NAME)
            self.dir = self._await_run()
            self.native.set_name(self.native.name)
            self.path = (self.dir + '/program.py').encode()
        _signal.signal(_SIGINT, _signal.default_int_handler)
        self.native.set_dumpable(True)
        if self.ctl is not None:
            self.session_start()
        path = self.path.decode()
        self.set_argv()
        os.chdir(self.dir)
        sys.argv[:] = [path]
        try:
            sys.orig_argv[:] = ['python3', path]
        except AttributeError:
            pass
        sys.path[:] = [self.dir] + self.path_tail
        # A fresh __main__, as the interpreter makes it before running a file.
        import builtins

        main = type(sys)('__main__')
        main.__loader__ = sys.modules['__main__'].__dict__.get('__loader__')
        main.__annotations__ = {}
        main.__builtins__ = builtins
        sys.modules['__main__'] = main

    def _await_run(self):
        """The run's directory, from PID 1; a runner that closes the pipe instead has no run for us."""
        data = b''
        while not data.endswith(b'\n'):
            try:
                chunk = os.read(self.wait_fd, 4096)
            except InterruptedError:
                continue
            except OSError:
                chunk = b''
            if not chunk:
                os._exit(0)
            data += chunk
        os.close(self.wait_fd)
        self.wait_fd = None
        return data[:-1].decode()

    def set_argv(self):
        if self.argv_area is not None:
            want = b'python3\0' + self.path + b'\0'
            start, end = self.argv_area
            size = end - start
            if len(want) <= size:
                ctypes.memmove(start, want + b'\0' * (size - len(want)), size)

    def session_start(self):
        """A session program (now dumpable, so /proc/self is its own) is the OOM killer's first
        choice; what it writes to its output pipes is known by their inodes (see hold)."""
        self.adj = _oom_adj()
        _oom_adj(1000)
        if _OWN_LIMIT:
            self.limit_memory()
        pipes = []
        for fd in (1, 2):
            st = os.fstat(fd)
            pipes.append((st.st_dev, st.st_ino))
        self.out_pipes = tuple(pipes)

    def limit_memory(self):
        """Where the OOM killer cannot pick the program (see own_limits), a hog meets its own
        limit, as a MemoryError, and a fork bomb its own process budget, before the sandbox's.
        Soft limits only, so that a holder can hand the next program larger ones (a program
        that raises its own could as well kill the holder: this is for mistakes, not malice)."""
        try:
            with open('/proc/self/status') as f:
                status = f.read()
            with open('/proc/meminfo') as f:
                meminfo = f.read()
            limits = own_limits(status, meminfo, _tasks())
        except OSError:
            return
        libc = self.native.libc
        self.own_limit, self.limits_before = None, ()
        for which, soft in zip((_RLIMIT_AS, _RLIMIT_NPROC), limits or ()):
            before = _rlimit(libc, which)
            if before is not None and _rlimit(libc, which, soft) is not None:
                self.limits_before += ((which, before),)
                if which == _RLIMIT_AS:
                    self.own_limit = soft

    def unkeepable(self):
        """Why this process cannot be kept as the state: what it left running would go on in the
        holder (threads, processes) or be shared with every later call (sockets). None: it can."""
        threading = sys.modules.get('threading')
        try:
            if threading is not None and threading.active_count() > 1:
                return 'threads'
        except Exception:  # noqa: BLE001
            return 'threads'
        if not _fork_safe_threads():  # native threads (a BLAS pool that stops at fork is fine)
            return 'threads'
        me = os.getpid()
        if any(p not in (1, me) and p not in self.spare for p in _live_pids()):
            return 'processes'
        ctl = self.ctl.fileno()
        for fd in os.listdir('/proc/self/fd'):
            try:
                target = os.readlink('/proc/self/fd/' + fd)
            except OSError:
                continue
            if target.startswith('socket:') and int(fd) != ctl:
                return 'sockets'
        return None

    def hold(self):
        """Becomes the state holder once the program succeeded; returns None when it cannot be kept
        (PID 1 is told why, and the program ends as usual). In the holder, it waits for PID 1's
        fork requests, and returns only in the process of the next program, ready to run it."""
        why = self.unkeepable()
        if why is None and self._flush_std_files() < 0:
            why = 'flush'
        if why:
            _send(self.ctl, b'N' + why.encode())
            return None
        # This call's output pipes must close (PID 1 waits for their end), even where the program
        # kept a copy of the descriptor: every such descriptor now points at /dev/null.
        null = os.open('/dev/null', os.O_RDWR)
        for fd in os.listdir('/proc/self/fd'):
            fd = int(fd)
            try:
                st = os.fstat(fd)
            except OSError:
                continue
            if fd != null and (st.st_dev, st.st_ino) in self.out_pipes:
                os.dup2(null, fd, inheritable=fd <= 2)
        os.close(null)
        # Set back before the process stops being dumpable: /proc/self is root's after that.
        if self.adj is not None:
            _oom_adj(self.adj)
        for which, soft in self.limits_before:
            _rlimit(self.native.libc, which, soft)
        # Like the runner: nobody may read or write the state through /proc (ptrace, mem).
        self.native.set_dumpable(False)
        _signal.signal(_SIGINT, _signal.SIG_IGN)
        if not _send(self.ctl, b'K'):
            os._exit(0)
        while True:
            data, fds = _recv(self.ctl, 3)
            if not data:
                os._exit(0)  # PID 1 let go of this state
            if data[:1] != b'F' or len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                continue
            d, _, spare = data[1:].decode('ascii', 'replace').partition('\n')
            random = sys.modules.get('random')
            seed = random.getstate() if random is not None else None
            try:
                pid = os.fork()
            except OSError:
                pid = -1
            if pid == 0:
                try:
                    if os.fork():
                        os._exit(0)
                except OSError:
                    os._exit(1)
                # The grandchild, reparented to PID 1 as soon as its parent is gone.
                return self.next_program(d, fds, tuple(int(p) for p in spare.split(',') if p.isdigit()), random, seed)
            for fd in fds:
                os.close(fd)
            if pid > 0:
                while True:
                    try:
                        os.waitpid(pid, 0)
                        break
                    except InterruptedError:
                        continue
                    except ChildProcessError:
                        break

    def next_program(self, d, fds, spare, random, seed):
        """In a process forked from a holder: becomes the next program, on the holder's __main__."""
        out_w, err_w, ctl = fds
        os.setsid()
        old = self.ctl.detach()
        os.close(old)
        self.ctl = _sock.socket(fileno=ctl)
        _send(self.ctl, b'S%d' % os.getpid())
        null = os.open('/dev/null', os.O_RDONLY)
        os.dup2(null, 0, inheritable=True)
        os.close(null)
        os.dup2(out_w, 1, inheritable=True)
        os.dup2(err_w, 2, inheritable=True)
        os.close(out_w)
        os.close(err_w)
        _signal.signal(_SIGINT, _signal.default_int_handler)
        self.native.set_dumpable(True)
        prev = self.dir
        # The holder, and our parent until its exit is through (it only calls _exit, but unmapping
        # a large state takes a moment): neither is something the program left.
        self.dir, self.spare = d, spare + (os.getppid(),)
        self.path = (d + '/program.py').encode()
        self.session_start()
        self.set_argv()
        os.chdir(d)
        path = self.path.decode()
        sys.argv[:] = [path]
        try:
            sys.orig_argv[:] = ['python3', path]
        except AttributeError:
            pass
        sys.path[:] = [d if p == prev else p for p in sys.path]
        # The program's own streams, whatever the last call left in sys.stdout (as a kernel does).
        for name in ('stdin', 'stdout', 'stderr'):
            orig = getattr(sys, '__%s__' % name, None)
            if orig is not None:
                setattr(sys, name, orig)
        # `random` reseeds itself after a fork; the state's generator goes on where it was instead.
        if random is not None and seed is not None:
            random.setstate(seed)
        self.fork_modules = set(sys.modules)
        self.exit_notice = None  # the page of the run this holder came from, which nobody reads now
        return self

    def open_main(self):
        """The program's globals and its open file, as `python3 file` has them before the first line."""
        path = self.path.decode()
        main = sys.modules['__main__'].__dict__
        main['__file__'] = path
        main['__cached__'] = None
        main['__loader__'] = sys.modules['_frozen_importlib_external'].SourceFileLoader('__main__', path)
        fp = self.native.libc.fopen(self.path, b'rb')
        if not fp:
            errno = ctypes.get_errno()
            _write_stderr("python3: can't open file %r: [Errno %d] %s\n" % (path, errno, os.strerror(errno)))
            self.native.libc.exit(2)
        return main, fp

    def finish(self, ending):
        """What follows the program's last statement; never returns, except in session mode, in the
        process of the next program forked from this one once it is the state. `ending` holds the program's
        exception (or None) and namespace, and is emptied: as in `python3 file`, the program's
        objects die when its modules are torn down (their __del__ runs then), not before."""
        exc, main_dict = ending
        ending.clear()
        if self.own_limit is not None and isinstance(exc, MemoryError):
            # It reached its own limit: room for its traceback and exit, and PID 1 tells the host.
            _rlimit(self.native.libc, _RLIMIT_AS, self.own_limit + OWN_LIMIT_EXIT_ROOM)
            _send(self.ctl, b'M')
        status = 0
        sigint = False
        try:
            _flush_io()
            if exc is not None:
                if exc.__traceback__ is not None:
                    exc.__traceback__ = exc.__traceback__.tb_next  # our frame, which `python3 file` has not
                if isinstance(exc, SystemExit):
                    # PyErr_Print -> Py_Exit: __file__ is still set while atexit handlers run.
                    status = _exit_status(exc)
                else:
                    sigint = type(exc) is KeyboardInterrupt
                    status = 1
                    self._print_error(exc)
                    main_dict.pop('__file__', None)
                    main_dict.pop('__cached__', None)
            else:
                main_dict.pop('__file__', None)
                main_dict.pop('__cached__', None)
        except _Exit as e:
            status = e.status
        del exc, main_dict
        if self.ctl is not None and status == 0:
            following = self.hold()
            if following is not None:
                return following
        status = self._finalize(status)
        if sigint:
            _signal.signal(_SIGINT, _signal.SIG_DFL)
            os.kill(os.getpid(), _SIGINT)
            status = 130
        self.native.libc.fflush(None)
        if self.exit_notice is not None:
            ctypes.c_uint32.from_address(self.exit_notice + 4).value = status & 0xFFFFFFFF
            ctypes.c_uint32.from_address(self.exit_notice).value = ExitNotice.MAGIC
            for fd in (1, 2):
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.native.libc.exit(status)

    def _unraisable(self, exc, obj, msg=None):
        hook = getattr(sys, 'unraisablehook', None)
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        if hook is not None and self.hook_args_type is not None:
            try:
                hook(self.hook_args_type((type(exc), exc, tb, msg, obj)))
                return
            except Exception:  # noqa: BLE001
                pass
        _write_stderr('Exception ignored in: %r\n' % (obj,))

    def _flush_std_files(self):
        status = 0
        for name in ('stdout', 'stderr'):
            f = getattr(sys, name, None)
            if f is None:
                continue
            try:
                closed = f.closed
            except Exception:  # noqa: BLE001
                closed = False
            if closed:
                continue
            try:
                f.flush()
            except Exception as e:  # noqa: BLE001
                if name == 'stdout':
                    self._unraisable(e, f)
                status = -1
        return status

    def _print_error(self, value):
        """PyErr_Print for an exception other than SystemExit (which the caller handles)."""
        t, tb = type(value), value.__traceback__
        sys.last_type, sys.last_value, sys.last_traceback = t, value, tb
        if sys.version_info >= (3, 12):
            sys.last_exc = value
        hook = getattr(sys, 'excepthook', None)
        try:
            sys.audit('sys.excepthook', hook if hook is not None else None, t, value, tb)
        except Exception:  # noqa: BLE001
            pass
        if hook is None:
            _write_stderr('sys.excepthook is missing\n')
            sys.__excepthook__(t, value, tb)
            return
        try:
            hook(t, value, tb)
        except SystemExit as e:
            raise _Exit(_exit_status(e)) from None
        except BaseException as e:  # noqa: BLE001
            e.__traceback__ = e.__traceback__.tb_next if e.__traceback__ is not None else None
            _write_stderr('Error in sys.excepthook:\n')
            sys.__excepthook__(type(e), e, e.__traceback__)
            _write_stderr('\nOriginal exception was:\n')
            sys.__excepthook__(t, value, tb)

    def _finalize(self, status):
        """Py_FinalizeEx, for everything the program made; returns the exit status."""
        import _weakref

        threading = sys.modules.get('threading')
        if threading is not None:
            try:
                threading._shutdown()
            except BaseException as e:  # noqa: BLE001
                self._unraisable(e, threading)
        import atexit

        atexit._run_exitfuncs()
        if self._flush_std_files() < 0:
            status = 120
        # finalize_modules, restricted to the modules the program imported and __main__.
        builtins = sys.modules['builtins']
        builtins._ = None
        for name in ('path', 'argv', 'ps1', 'ps2', 'last_type', 'last_value', 'last_traceback', 'last_exc',
                     'path_hooks', 'path_importer_cache', 'meta_path', '__interactivehook__'):
            if name != 'last_exc' or sys.version_info >= (3, 12):
                setattr(sys, name, None)
        for name in ('stdin', 'stdout', 'stderr'):
            orig = getattr(sys, '__%s__' % name, None)
            if orig is not None:
                setattr(sys, name, orig)
        modules = sys.modules
        fork_modules = self.fork_modules
        weak = []
        for name, mod in list(modules.items()):
            if name in fork_modules and name != '__main__':
                continue
            if isinstance(mod, type(sys)):
                weak.append(_weakref.ref(mod))
            modules[name] = None
        bdict = builtins.__dict__
        if bdict != _BUILTINS_COPY:
            bdict.clear()
            bdict.update(_BUILTINS_COPY)
        gc.collect()
        for ref in reversed(weak):
            mod = ref()
            if mod is not None:
                _module_clear(mod.__dict__)
        del weak
        gc.collect()
        if self._flush_std_files() < 0:
            status = 120
        return status


# ---------------------------------------------------------------------------------------------
def main():
    """Stage 0 hands over to stage 1 (an exec: it never returns). Stage 1 sets up and serves for
    good; it returns only in a forked child, with the Program that child is to become."""
    if '_CODEACT_STAGE' not in globals():
        _stage0_exec(sys.argv[1] if len(sys.argv) > 1 else '')
    # Stage 1. Everything a program could see of this process is kept as `python3 file` has it.
    try:
        os.close(3)
    except OSError:
        pass
    cfg = parse_config(_CODEACT_CONFIG)  # noqa: F821 (set by stage 0)
    # A memory cgroup we can see is one whose OOM killer picks the program (its oom_score_adj);
    # none (gVisor) is a sandbox that would end whole, so session programs get limits of their own.
    global _OWN_LIMIT
    _OWN_LIMIT = read_oom_kills() is None
    preload = [m for m in cfg.get('preload', '').split(',') if m]
    noted_dirty = [m for m in cfg.get('dirty', '').split(',') if m]

    # The work area's layout (the host does the same; whoever is first wins, both are idempotent).
    for d in ('/sandbox/home', '/sandbox/tmp', RUNS):
        try:
            os.makedirs(d, 0o700, exist_ok=True)
        except OSError as e:
            _log('cannot create %s: %s' % (d, e))

    # Python handles SIGINT (KeyboardInterrupt); PID 1 must not, or a program could stop the runner
    # with kill(1, SIGINT). Every other signal has no handler here, so the kernel drops them.
    _signal.signal(_SIGINT, _signal.SIG_IGN)

    # Channel off fds 0/1: stray prints of preloaded modules go to stderr (the host's log), and a
    # child's 0/1/2 are simply replaced.
    chan_in = os.dup(0)
    chan_out = os.dup(1)
    devnull = os.open('/dev/null', os.O_RDWR | os.O_CLOEXEC)
    os.dup2(devnull, 0, inheritable=True)
    os.dup2(2, 1, inheritable=True)

    native = unusable = None
    try:
        native = _Native()
    except Exception as e:  # no ctypes/libffi, an exotic libc: stay a keeper and say so
        unusable = 'runner unavailable: %s: %s' % (type(e).__name__, e)
        _log(unusable)

    # sys.path as a script would have it, minus its first entry (the script's directory), which
    # each child sets. `-c` put '' (the current directory) there: preloading must not look in it.
    if sys.path and sys.path[0] in ('', os.getcwd()):
        del sys.path[0]
    sys.path_importer_cache.pop('', None)
    path_tail = list(sys.path)

    fds_before = _open_fds()
    preloaded, missing, dirty = _preload(preload if native else [])
    # Descriptors a preloaded module keeps open (a fresh import would have them too): children keep them.
    keep_fds = _open_fds() - fds_before
    if dirty:
        # Start over without the module: this process can no longer be what a fresh one would be.
        bad = dirty[0].split('(')[0]
        _log('not preloading %s: %s' % (bad, dirty[0]))
        os.dup2(chan_in, 0)
        os.dup2(chan_out, 1)
        keep = [m for m in preload if m != bad]
        _stage0_exec('preload=%s;dirty=%s' % (','.join(keep), ','.join(noted_dirty + [dirty[0]])), _START_ENV)

    # Everything preloaded goes to the permanent generation: a child's collections (and its exit)
    # never walk it, so they cost what the program's own objects cost, and its pages stay shared.
    gc.collect()
    gc.freeze()

    hook_args_type = _unraisable_type()
    # Modules a fresh `python3 program.py` would not have: a file of the same name next to the
    # program would shadow them there, but not here (they are already imported).
    # (Built-in modules are found before sys.path is searched: nothing shadows them.)
    extra = _extra_modules() - set(sys.builtin_module_names)
    argv_area = _argv_area()

    runner = Runner(Channel(chan_in, chan_out), unusable, preloaded, missing, noted_dirty, extra, {devnull})
    runner.native = native
    if unusable:
        runner.serve_unusable()

    depth = _RecursionDepth(native)
    runner.problem = depth.calibrate()
    if runner.problem:
        _log(runner.problem)
    # The probes' children were reaped by waitpid; drain their SIGCHLD wake-ups.
    runner.reap(None)

    program = Program(runner.serve(), native, depth, keep_fds, runner.own_fds, argv_area, path_tail, hook_args_type)
    program.become()
    return program


if __name__ == '__main__':
    # main() returns only in a forked child. The program runs here, at this file's module level,
    # so that only two frames of the runner are above its own (the -c line and this file), and the
    # recursion counter is set in the frame that calls PyRun_FileExFlags, as it was calibrated.
    # In session mode finish() returns in the next program's process, forked from this state.
    _program = main()
    while _program is not None:
        _main, _fp = _program.open_main()
        _exc = None
        if _program.depth.field is not None:
            ctypes.c_int.from_address(_program.depth.field).value = _program.depth.target
        try:
            _program.native.pyrun(_fp, _program.path, 257, _main, _main, 1, _program.native.cflags)
        except BaseException as _e:  # noqa: BLE001 - the program's uncaught exception, SystemExit included
            _exc = _e
        # Our own names for the program's exception and namespace go before its end.
        _ending = [_exc, _main]
        del _exc, _main
        _program = _program.finish(_ending)
