# The sandbox runner, part 05: what the host also runs by `docker exec` when there is no runner to
# ask (warmRunner off, a runner gone): the container's OOM-kill count, and killing a program's
# processes. The build makes those two programs from this part alone (dist/guest.py), so it
# imports what it uses and reads nothing the other parts define.
import os
import time

_SIGKILL = 9
_SIGCONT = 18
_SIGSTOP = 19
# Where the container's cgroup counts the processes the kernel killed for memory (v2, then v1).
OOM_COUNTERS = ('/sys/fs/cgroup/memory.events', '/sys/fs/cgroup/memory/memory.oom_control')


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


class OomCounter:
    """read_oom_kills for PID 1, which reads the count before and after every call: the file is
    found once (the container's cgroup does not change) and kept open, and each read is one
    pread at offset 0, which makes the kernel write the file anew. Probing and opening were four
    syscalls a read, and under gVisor, which has no such file, two failed opens; each syscall
    there costs tens of µs. `fd` is None where no file says the count."""

    def __init__(self, paths=OOM_COUNTERS):
        self.fd = None
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            self.fd = fd
            if self.read() is not None:
                return
            os.close(fd)
            self.fd = None

    def read(self):
        if self.fd is None:
            return None
        try:
            text = os.pread(self.fd, 4096, 0).decode('ascii', 'replace')
        except OSError:
            return None
        return oom_kill_count(text)


def _proc_status(pid):
    """(state letter, real uid) from /proc/<pid>/status (b'Z' for a zombie), None when it is gone.
    Its Uid line is the process's own even where it is not dumpable (the directory is root's then).
    A process whose first thread exited alone (SYS_exit, not exit_group) shows that thread's Z while
    its other threads run on: it is b'L', alive, whatever the first thread's state says."""
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
    threads = 1
    for line in text.split(b'\n'):
        if line.startswith(b'State:'):
            state = line[6:].strip()[:1]
        elif line.startswith(b'Uid:'):
            fields = line[4:].split()
            uid = int(fields[0]) if fields and fields[0].isdigit() else None
        elif line.startswith(b'Threads:'):
            value = line[8:].strip()
            threads = int(value) if value.isdigit() else threads
    if state in (b'Z', b'X', b'x') and threads > 1:
        state = b'L'
    return (state, uid) if state is not None and uid is not None else None


def _live_pids():
    """Every process of our uid that is not yet dead (zombies cannot do anything; a process whose
    first thread alone is a zombie can: _proc_status): what kill(-1) reaches. Others (the host's
    lock holder runs as root) are not a program's to leave or ours to kill."""
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


def _until_only(me, spare):
    """Kills every live process but PID 1, `me` and `spare` until none is left. Bounded: a process
    stuck in the kernel (uninterruptible sleep) dies when it comes out, and PID 1 must not hang on
    it (supervise gives up on such a kill after 5 s as well)."""
    give_up = time.monotonic() + 3
    while time.monotonic() < give_up:
        others = [p for p in _live_pids() if p != 1 and p != me and p not in spare]
        if not others:
            return True
        for p in others:
            try:
                os.kill(p, _SIGKILL)
            except OSError:
                pass
    return False


def _kill_all(pid, spare=(), wait=False, resume=True):
    """The program's group (`pid`; None from docker exec, which knows no group), then every other
    process of ours (those that left the group); PID 1 and the caller are never hit by kill(-1).
    `spare`: state holders, which kill(-1) would take too (same uid): then everything is stopped
    first (a stopped process cannot fork, so a fork bomb cannot outrun the loop), each process
    but PID 1, the caller and the holders is killed until no other is left, and the holders that
    were running go on (not with `resume` False: a check of them follows). `wait` (the host's
    kill after a call): also without holders, returns
    only once every process killed is dead (a zombie has closed its sockets, so the proxy has
    logged its connections before the call's end-of-record marker), or after the same bound."""
    if pid is not None:
        try:
            os.killpg(pid, _SIGKILL)
        except OSError:
            pass
    if not spare:
        try:
            os.kill(-1, _SIGKILL)
        except OSError:
            pass
        if wait:
            _until_only(os.getpid(), ())
        return
    # A holder PID 1 stopped between calls stays stopped: continued, it would run the state's
    # code outside any call (see PID 1's check of a holder).
    held = [p for p in spare if (_proc_status(p) or (None,))[0] not in (b'T', b't')] if resume else []
    try:
        os.kill(-1, _SIGSTOP)
    except OSError:
        pass
    _until_only(os.getpid(), spare)
    for p in held:
        try:
            os.kill(p, _SIGCONT)
        except OSError:
            pass
