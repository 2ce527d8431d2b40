# The sandbox runner, part 40: the channel to the host, and the files and processes a run
# leaves (its directory, modules that would shadow, the processes to kill).
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
