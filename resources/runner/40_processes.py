# The sandbox runner, part 40: the channel to the host, and the files and processes a run
# leaves (its directory, modules that would shadow, the processes to kill).
def _forks_outlive_kill(libc):
    """True under gVisor, whose kernel lets a fork already under way finish after its caller was
    sent SIGKILL (Linux fails such a fork: copy_process checks for a fatal signal under the lock
    kill takes). gVisor says itself what it is in the kernel log any process may read (its first
    line, "Starting gVisor..."); Linux refuses the read to a process without CAP_SYSLOG."""
    buf = ctypes.create_string_buffer(64)
    try:
        n = libc.klogctl(3, buf, 64)  # SYSLOG_ACTION_READ_ALL
    except (AttributeError, OSError):
        return False
    return n > 0 and b'Starting gVisor' in buf.raw[:n]


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


# A request like the host's, for rehearse_request.
_REHEARSAL = encode_frame(b'r', 1, b'dir=/sandbox/runs/0001-000000\nmax=1\ngrace=1000\ncode=1\n\nprint(1)\n')


def rehearse_request(stale, extra, listed, count_ooms, notice=None):
    """Runs PID 1's side of a call on a made-up one, touching nothing the program will see: the
    request's frame read, its parse, the checks that read the file system, then the replies and
    frames that follow it, and the reads of the exit notice (`notice`, the waiting child's, not
    written yet). Called once a child is forked ahead, whose fork shared every page of this
    process again: each page the call's path then writes first is a copy-on-write fault, which
    gVisor handles itself at several µs each. Taken here, in the idle time, they are off the
    next call's path (measured under gVisor, data image: the frame's read and parse 1.5 to
    0.3 ms). Returns the parsed request and the exit frame."""
    reader = FrameReader()
    reader.push(_REHEARSAL)
    req = None
    for _kind, _rid, payload in reader.frames():
        req = parse_run_request(payload)
    stale()
    _shadowing(listed, extra)
    before = count_ooms()
    encode_frame(b'S', 1, started_reply(1))
    encode_frame(b'O', 1, b'1\n')
    if notice is not None:
        notice.used(_LEARNABLE)
    time.monotonic()
    return req, encode_frame(b'X', 1, exit_reply(0, False, False, False, before, count_ooms()))


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


def _on_sigchld(_signum, _frame):
    pass
