# The sandbox runner, part 45: watching one program's run for PID 1 (Runner.supervise), from its
# start until it has ended and its output is drained.
_WATCHED = object()  # next_timeout's word for "the watch is over"


class _Supervision:
    """Streams the program's output, enforces the backstop, kills on a k frame, and learns how it
    ended. `link`: a session program's, over which it says it is kept (K: it is now a holder, and
    counts as exited 0) or why it cannot be (N), or that it met its own memory limit (M).
    `notice`: a fresh program's exit notice."""

    def __init__(self, runner, rid, req, pid, out_r, err_r, poller, link, notice):
        self.runner = runner
        self.channel = runner.channel
        self.rid = rid
        self.req = req
        self.pid = pid
        self.poller = poller
        self.link = link
        self.notice = notice
        self.streams = {out_r: b'O', err_r: b'E'}
        for fd in self.streams:
            poller.register(fd, select.POLLIN)
        self.status = None
        self.killed = self.limited = self.orphans = False
        self.kept = False
        self.unkept = None
        self.own_oom = False
        self.link_fd = None
        if link is not None:
            self.link_fd = link.fileno()
            poller.register(self.link_fd, select.POLLIN)
        self.total = 0
        self.exited_at = self.kill_at = None
        # Whether a SIGCHLD may have come since the last reap (its handler wrote to wake_r): only
        # then is reaping worth its two syscalls (a read and a waitpid), each tens of µs under
        # gVisor, on every wake-up for output. A child that ended before the watch began left its
        # byte there: the first poll says so.
        self.woken = False
        # Output pipes at their end, closed once the exit frame is sent (release): off its way.
        self.spent = []

    def watch(self):
        # Frames that arrived together with the run request (a kill sent at once) are already buffered.
        self.handle_input()
        while True:
            timeout = self.next_timeout()
            if timeout is _WATCHED:
                break
            try:
                events = self.poller.poll(timeout)
            except InterruptedError:
                continue
            for fd, ev in events:
                self.on_event(fd, ev)
        for fd in list(self.streams):
            self.poller.unregister(fd)
            self.spent.append(fd)
        self.streams.clear()
        if self.link_fd is not None:
            self.poller.unregister(self.link_fd)

    def kill(self):
        if self.kill_at is None:
            self.kill_at = time.monotonic()
            _kill_all(self.pid, self.runner.spared())

    def handle_input(self):
        for kind, frid, payload in self.channel.frames():
            if kind == b'k' and frid == self.rid:
                self.killed = True
                self.kill()
            elif kind == b'h':
                # A new host attached: the one that started this run is gone.
                self.killed = True
                self.kill()
                self.runner.pending_hellos.append(payload)

    def next_timeout(self):
        """How long to wait for the next event (None: until one comes), or _WATCHED."""
        reaped = None
        if self.woken or self.kill_at is not None:
            self.woken = False
            reaped = self.runner.reap(self.pid)
        now = time.monotonic()
        if self.status is None and reaped is not None:
            self.status = reaped
            self.exited_at = now
        if self.status is None and not self.streams and self.kill_at is None and self.notice is not None:
            self.status = self.notice.status()
            if self.status is not None:
                # Told, not reaped: the child is in exit(). It has this long to be gone.
                self.exited_at = now
                self.runner.exiting[self.pid] = now + DYING_GRACE_S
        if self.status is not None and not self.streams:
            return _WATCHED
        if self.kill_at is not None and now - self.kill_at > 5:
            return _WATCHED  # what we killed does not go away (uninterruptible sleep?): report what we have
        if self.status is not None and self.kill_at is None:
            left = self.exited_at + self.req['grace'] - now
            if left > 0:
                return int(left * 1000) + 1
            # The program is gone but something it started still holds its output.
            self.orphans = True
            self.kill()
            return 50
        return 50 if self.kill_at is not None else None

    def release(self):
        """Closes the output pipes; called once the run's end is reported."""
        for fd in self.spent:
            os.close(fd)
        self.spent = []

    def on_event(self, fd, ev):
        if fd == self.runner.wake_r:
            self.woken = True  # reaped at the top of the loop
        if fd == self.link_fd:
            self.on_link()
        elif fd == self.channel.fd_in:
            self.channel.feed()
            if self.channel.closed:
                self.poller.unregister(self.channel.fd_in)
            self.handle_input()
        elif fd in self.streams:
            self.on_output(fd, ev)

    def on_link(self):
        data, _fds = _recv(self.link)
        if data == b'K' and self.status is None:
            self.kept = True
            self.status = 0  # as waitpid says exit 0
            self.exited_at = time.monotonic()
        elif data[:1] == b'N':
            self.unkept = data[1:41].decode('ascii', 'replace')
        elif data == b'M':
            self.own_oom = True  # it ends with MemoryError at its own limit
        if data[:1] not in (b'N', b'M'):
            # Kept, or the program is gone: nothing more comes this call.
            self.poller.unregister(self.link_fd)
            self.link_fd = None

    def on_output(self, fd, ev):
        data = b''
        # A pipe whose writers are gone and which holds nothing says POLLHUP alone: its end, known
        # without the read that would return it (a syscall saved on the way to the exit frame).
        if ev & select.POLLIN or not ev & select.POLLHUP:
            try:
                data = os.read(fd, CHUNK)
            except InterruptedError:
                return
            except OSError:
                data = b''
        if not data:
            self.poller.unregister(fd)
            self.spent.append(fd)
            del self.streams[fd]
            return
        if self.limited:
            return
        self.total += len(data)
        self.channel.send(self.streams[fd], self.rid, data)
        limit = self.req['max']
        if limit and self.total > limit:
            self.limited = True
            self.kill()
