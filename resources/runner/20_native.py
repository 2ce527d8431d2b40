# The sandbox runner, part 20.
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

    # The status page, then room for the pages a child copied (part 67): a u32 count at PAGES,
    # then as many u64 addresses. Unwritten, the room takes no memory.
    STATUS_SIZE = 4096
    PAGES = STATUS_SIZE
    SIZE = STATUS_SIZE + 8 * 4096
    MAGIC = 0x43584954  # 'CXIT'

    def __init__(self, libc):
        self.libc = libc
        addr = libc.mmap(None, self.SIZE, 3, 0x01 | 0x20, -1, 0)  # PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS
        self.addr = None if addr in (None, ctypes.c_void_p(-1).value) else addr

    # After the status: which of the modules the runner may learn the program had imported
    # (u16 length at USED, then the names, comma-separated ASCII), written before MAGIC.
    USED = 8

    def status(self):
        """The wait status the child left, or None."""
        if self.addr is None or ctypes.c_uint32.from_address(self.addr).value != self.MAGIC:
            return None
        return (ctypes.c_uint32.from_address(self.addr + 4).value & 0xFF) << 8

    def used(self, learnable):
        """The learnable modules the program said it imported. The page is the program's to write:
        only names of `learnable` count, so it can at most ask for what the user allowed."""
        if self.status() is None:
            return ()
        n = ctypes.c_uint16.from_address(self.addr + self.USED).value
        raw = ctypes.string_at(self.addr + self.USED + 2, min(n, self.STATUS_SIZE - self.USED - 2))
        said = set(raw.decode('ascii', 'replace').split(','))
        return tuple(m for m in learnable if m in said)

    @classmethod
    def write_used(cls, addr, names):
        """In the child, before the status's MAGIC: the names it imported."""
        raw = ','.join(names).encode('ascii', 'replace')
        room = cls.STATUS_SIZE - cls.USED - 2
        if len(raw) > room:  # whole names only: a cut one could read as another module
            raw = raw[:raw.rfind(b',', 0, room + 1)]
        ctypes.memmove(addr + cls.USED + 2, raw, len(raw))
        ctypes.c_uint16.from_address(addr + cls.USED).value = len(raw)

    def pages(self):
        """The page addresses the child said it copied, or None when it did not say."""
        if self.status() is None:
            return None
        n = ctypes.c_uint32.from_address(self.addr + self.PAGES).value
        if n == 0:
            return None
        n = min(n, (self.SIZE - self.PAGES - 8) // 8)
        return (ctypes.c_uint64 * n).from_address(self.addr + self.PAGES + 8)[:]

    @classmethod
    def write_pages(cls, addr, pages):
        """In the child, before the status's MAGIC: the pages it copied (as many as there is room for)."""
        pages = pages[:(cls.SIZE - cls.PAGES - 8) // 8]
        if pages:
            (ctypes.c_uint64 * len(pages)).from_address(addr + cls.PAGES + 8)[:] = pages
            ctypes.c_uint32.from_address(addr + cls.PAGES).value = len(pages)

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
            # A name no program could have made ahead (a runner also starts over after programs ran).
            probe = '/sandbox/tmp/.codeact-depth-%d-%s.py' % (os.getpid(), os.urandom(6).hex())
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
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
