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
