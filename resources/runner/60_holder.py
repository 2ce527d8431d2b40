# The sandbox runner, part 60.
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


# PID 1's own check of a holder. The holder's checks (Program.unkeepable) run in the program's
# process, where the program can replace them: the runner's globals are one frame above its own,
# and sys.stdout, sys.modules and `random` are the program's objects. So a holder is taken as the
# state only as PID 1 sees it from outside, stopped (SIGSTOP, which no handler can catch or
# block): one thread, no other process of the sandbox, no inet socket open. It stays stopped
# between calls, so the state runs no code outside a call, and it is checked again before each
# fork and whenever a call that failed leaves it the state.
_INET_TABLES = ('/proc/net/tcp', '/proc/net/tcp6', '/proc/net/udp', '/proc/net/udp6', '/proc/net/raw', '/proc/net/raw6')
# How long a holder may take to stop (a process in the kernel stops on its way out).
HOLDER_STOP_SECONDS = 5.0


def _holder_sockets(pid):
    """Whether the process `pid` holds a socket other than a Unix one (its link to PID 1 is one), read
    from its descriptors, or None where they cannot be read (it is not dumpable: see hold). Unix
    sockets reach only the sandbox's own processes, and none runs beside a stopped holder."""
    inodes = []
    try:
        for fd in os.listdir('/proc/%d/fd' % pid):
            try:
                target = os.readlink('/proc/%d/fd/%s' % (pid, fd))
            except OSError:
                continue
            if target.startswith('socket:['):
                inodes.append(target[8:-1])
    except OSError:
        return None
    if not inodes:
        return False
    table = _read_whole('/proc/net/unix')
    if table is None:
        return True
    # Num RefCount Protocol Flags Type St Inode [Path]
    unix = {line.split()[6].decode() for line in table.split(b'\n')[1:] if len(line.split()) >= 7}
    return any(i not in unix for i in inodes)


def _inet_sockets(uid):
    """Inet sockets of `uid` in the sandbox's network namespace that a process holds open (a closed
    one waiting out TIME_WAIT has inode 0). Read by PID 1 when no other process of the sandbox is
    running, so every one found is the holder's."""
    return sum(inet_sockets_in(_read_whole(path) or b'', uid) for path in _INET_TABLES)


def _read_whole(path):
    """A /proc file's whole text (the kernel writes it as it is read), or None where it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    chunks = []
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b''.join(chunks)
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)


def inet_sockets_in(table, uid):
    """How many rows of a /proc/net/{tcp,udp,raw}[6] table are sockets of `uid` still open."""
    n = 0
    for line in table.split(b'\n')[1:]:
        fields = line.split()
        # sl local rem st queues timer retransmits uid timeout inode ...
        if len(fields) >= 10 and fields[7].isdigit() and int(fields[7]) == uid and fields[9].isdigit() and fields[9] != b'0':
            n += 1
    return n


def _stop_holder(pid, wake_r):
    """Stops `pid` and waits until the kernel says it is stopped: True; False when it is gone, or
    not stopped within HOLDER_STOP_SECONDS. PID 1's SIGCHLD (a child that stops reports it)
    wakes the wait; a holder still reparenting is looked at again every few ms."""
    try:
        os.kill(pid, _SIGSTOP)
    except OSError:
        return False
    poller = None
    deadline = time.monotonic() + HOLDER_STOP_SECONDS
    while True:
        st = _proc_status(pid)
        # b'L': its first thread exited alone, and the rest runs on; no holder is kept like that.
        if st is None or st[0] in (b'Z', b'X', b'x', b'L'):
            return False
        if st[0] in (b'T', b't'):
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if poller is None:
            poller = select.poll()
            poller.register(wake_r, select.POLLIN)
        try:
            if poller.poll(min(5, int(left * 1000) + 1)):
                # Only the wake-up is taken here; reap() still finds every exit.
                os.read(wake_r, 4096)
        except (InterruptedError, BlockingIOError):
            pass


def _stat_fields(pid):
    """/proc/<pid>/stat's fields after the command's closing parenthesis (the command, a name the
    process chooses, may hold anything), from its state on; None when it is gone."""
    try:
        fd = os.open('/proc/%d/stat' % pid, os.O_RDONLY | os.O_CLOEXEC)
        try:
            return os.read(fd, 4096).rpartition(b')')[2].split()
        finally:
            os.close(fd)
    except OSError:
        return None


def _stat_of(pid):
    """(parent pid, start time), or None. The start time tells a process from a later one that got
    its number."""
    fields = _stat_fields(pid)
    try:
        return int(fields[1]), int(fields[19])
    except (TypeError, IndexError, ValueError):
        return None


def _run_mark(pid):
    """How much `pid` has run: its CPU time in ticks, and where the kernel says so, how often it was
    switched in (voluntary and not). A stopped process adds to none of them."""
    fields = _stat_fields(pid)
    try:
        ticks = int(fields[11]) + int(fields[12])
    except (TypeError, IndexError, ValueError):
        ticks = None
    # The last line of each name: a name the process gave itself comes first, and gVisor writes it unescaped.
    lines = (_read_whole('/proc/%d/status' % pid) or b'').split(b'\n')
    switches = tuple(next((ln.split()[-1] for ln in reversed(lines) if ln.startswith(key) and ln.split()[-1].isdigit()), None)
                     for key in (b'voluntary_ctxt_switches:', b'nonvoluntary_ctxt_switches:'))
    return ticks, switches


def holder_problem(pid, stopped, gone):
    """Why the stopped process `pid` cannot hold the state, as the host's words for it (threads,
    processes, sockets), or None. Processes that are not its doing: `stopped`, an earlier holder
    PID 1 stopped (spared only while it is stopped: running, it could start something after this
    look), and `gone`, ones PID 1 killed (they run no code of their own any more)."""
    # The thread count where the process's name cannot forge it (gVisor writes the name in status unescaped).
    fields = _stat_fields(pid)
    if fields is None:
        return 'gone'
    if len(fields) < 18 or fields[17] != b'1':
        return 'threads'
    me = os.getpid()
    for p in _live_pids():
        if p in (1, me, pid) or p in gone:
            continue
        if p in stopped and (_proc_status(p) or (None,))[0] in (b'T', b't'):
            continue
        return 'processes'
    # Its descriptors when they can be read (a few syscalls); else every inet socket of the
    # sandbox's network namespace, whose tables the kernel walks whole (about 10 ms).
    sockets = _holder_sockets(pid)
    if sockets is None:
        sockets = _inet_sockets(os.getuid()) > 0
    return 'sockets' if sockets else None
