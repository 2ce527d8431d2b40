# The sandbox runner, part 50: the runner's loop (PID 1 serving the host).

class Runner(SessionStateDesk):
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
        self.oom = OomCounter()
        if self.oom.fd is not None:
            self.own_fds.add(self.oom.fd)
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
        # The next session program's process, forked ahead from the holder ({'pid', 'sock', 'mark'}).
        self.ahead = None
        # Holders killed and not yet reaped: a large one takes a moment to go, and a program must
        # not be told it left them running.
        self.dying = set()
        # Why the state was given up before this call's program started (verify_holder), for its reply.
        self.dropped = None
        # The holder may run now: PID 1 continued it to fork a program, and has not stopped it since.
        self.holder_free = False
        # What its last check saw of how much it has run (_run_mark): stopped, it runs no more.
        self.holder_mark = None
        # The process each kept program was forked through (a holder's child, by its start time),
        # while it may still be going away.
        self.middles = {}
        # Preloading on first use: the config's lists, and the learnable modules programs imported
        # since (the runner starts over with them once it is idle; see relearn).
        self.preload_config = []
        self.learn_config = []
        self.learned = set()
        # The pages fresh calls wrote, for children forked ahead to write first (part 67).
        self.pages_ahead = PagesAhead()
        # Whether a program killed in a fork may still make its child (gVisor): main() says.
        self.forks_outlive_kill = False

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
            if self.ahead and pid == self.ahead['pid']:
                # Stopped, it dies only by running or by a kill from outside (PID 1's own let it go
                # first): whatever it did may be in the state's files, which goes with it.
                self.own_fds.discard(self.ahead['sock'].fileno())
                self.ahead['sock'].close()
                self.ahead = None
                _log('the process forked ahead of the next call ended between calls; the state is given up')
                self.give_up_before_call('ran')
            if self.state and pid == self.state['pid']:
                # The holder died (the OOM killer, a program's signal): its state is gone, and the
                # next session call says so (it starts from an empty state).
                _log('the state holder died; its state is gone')
                self.own_fds.discard(self.state['sock'].fileno())
                self.state['sock'].close()
                self.state = None
                self.drop_ahead()  # forked from a state that is gone
        self.watch_holder()
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
        try:
            # The work area's top, a few names (the runs folder grows with the calls).
            rehearse_request(self.stale, self.extra, os.path.dirname(RUNS), self.oom.read, notice)
        except Exception as e:  # a rehearsal is never worth a call
            _log('rehearsal: %r' % e)
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
        """The modules a child starts with (ForkModules), taken here rather than in every child:
        building the set touches every module name, and each page touched after a fork is a
        copy-on-write fault (2.4 ms of a warm call on runc, 25 ms under gVisor, measured in the
        data image)."""
        if self._loaded is None or len(sys.modules) != self._loaded_len:
            self._loaded_len = len(sys.modules)
            self._loaded = ForkModules(sys.modules)
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
                payload = self.pending_hellos.pop(0)
                if not self.learned:  # else left to the next runner, as below
                    self.hello(payload)
            if self.learned and self.state is None and not self.channel.reader.buf and not self.channel.closed:
                child = self.relearn()
                if child is not None:
                    return child
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
                    # About to start over: the host repeats its hello every second, and the next
                    # runner answers it once it is set up (an answer from this one would call it ready).
                    if not self.learned:
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
                elif kind == b'a':
                    self.channel.send(b'A', rid, ahead_reply(self.fork_ahead_of_call()))
                    # Its waits took SIGCHLD's wake-ups (a replaced holder going away): reaped now.
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
        else:
            # A state is about to be held: the runner cannot start over, and hosts it told it
            # would are answered by this one again (what fresh calls import is learned anew).
            self.learned.clear()
        made = req['code'] is not None
        if made:
            problem = _write_program(d, req['code'])
            if problem:
                self.channel.send(b'D', rid, declined_reply(problem, False))
                return None
        # Only fresh mode must be indistinguishable from `python3 file`; a session's interpreter
        # keeps what earlier calls imported, as a notebook's kernel does. A directory this process
        # has just made (mkdir fails on one that exists) holds program.py alone: only one the host
        # wrote, with the program's files, is listed (five syscalls, tens of µs each under gVisor).
        why = None if session else self.stale() or (None if made else _shadowing(d, self.extra))
        self.await_exits()
        oom_before = self.oom.read()
        if why:
            # A fork of this interpreter would not be what `python3 file` is now (pip made the user
            # site, a file would shadow a preloaded module): the child execs a new interpreter
            # instead. It is still PID 1's child, so whatever it leaves ends with the call, as on
            # the warm path; `docker exec` would leave a daemon running into later calls.
            return self.run_cold(rid, req, why, poller, oom_before)
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
        if session and self.state and not req['reset'] and self.ahead:
            taken = self.take_ahead(d, out_w, err_w)
            if taken is not None:
                link.close()
                theirs.close()
                theirs = None
                pid, link = taken
                base = self.state['id']
        # Not taken (a reset, a check failed): it goes, as the process it is is no program's.
        self.drop_ahead()
        if pid is None and session and self.state and not req['reset']:
            # Stopped since it was checked, and nobody of ours continues it: checked again all the same,
            # and it must not have run meanwhile.
            self.dropped = self.verify_holder(self.state['pid'], since_mark=True)
            if self.dropped is not None:
                self.give_up_state(self.dropped)
        if pid is None and session and self.state and not req['reset']:
            st = self.state
            msg = ('F%s\n%s' % (d, ','.join(str(p) for p in self.not_the_programs()))).encode()
            self.holder_free = True
            try:
                os.kill(st['pid'], _SIGCONT)
            except OSError:
                pass
            if _send(st['sock'], msg, (out_w, err_w, theirs.fileno())):
                pid = self.await_start(link, st['pid'])
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

    def run_cold(self, rid, req, why, poller, oom_before):
        """Runs a fresh program in a new interpreter (exec), supervised as any other. Returns the
        child's exec in the child (it never returns there); None in the runner."""
        _log('running %s in a new interpreter (%s)' % (req['dir'], why))
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            pid = os.fork()
        except OSError as e:
            for fd in (out_r, out_w, err_r, err_w):
                os.close(fd)
            self.channel.send(b'D', rid, declined_reply('fork: %s' % e.strerror, True))
            return None
        if pid == 0:
            _exec_program(req['dir'], out_w, err_w)
        os.close(out_w)
        os.close(err_w)
        return self.started(rid, req, pid, out_r, err_r, poller, oom_before, None, '', None)

    def started(self, rid, req, pid, out_r, err_r, poller, oom_before, link, base, notice):
        """A run whose program is under way: says so, supervises it, then forks the next child
        ahead (fresh mode). Returns that child's spec in the child; None here."""
        self.channel.send(b'S', rid, started_reply(pid))
        try:
            self.supervise(rid, req, pid, out_r, err_r, poller, oom_before, link, base, notice)
        finally:
            if notice is not None:
                notice.close()
        # No child forked ahead when the runner is about to start over (relearn would kill it).
        return None if req['session'] or self.learned else self.fork_ahead()

    def relearn(self):
        """Starts the runner over (stage 0 again) with the modules programs imported preloaded.
        Called only when idle: no session state (a holder's state would be lost), no frame
        buffered (a frame already read would be lost; one still in the pipe is read by the next
        runner). The next call waits for the imports, which its program would otherwise have
        paid itself.

        Programs have had the work area, and the next interpreter starts as PID 1 with the
        channel: it is dumpable until it has set itself up, Python's start reads the user site
        under HOME, and `-c` puts the current directory first on sys.path. So nothing of the
        chat's may meet it: every other process is killed first (a fresh call's leftovers are
        not the next call's), it starts in `/`, and not at all once the user site or a
        matplotlibrc it would read has changed."""
        learned, self.learned = self.learned, set()
        why = self.stale()
        self.drop_waiting()
        if why is None and not self.kill_the_rest():
            why = 'processes of earlier calls did not end'
        if why is not None:
            return self.give_up_learning(why)
        keep = self.preload_config + [m for m in self.learn_config if m in learned and m not in self.preload_config]
        _log('programs here imported %s: starting over with it preloaded' % ', '.join(m for m in self.learn_config if m in learned))
        os.dup2(self.channel.fd_in, 0)
        os.dup2(self.channel.fd_out, 1)
        try:
            os.chdir('/')
            _start_over(keep, self.learn_config, self.noted_dirty)
        except (OSError, SystemExit) as e:
            # Not started over (exec refused, a source too large): serve on as this runner.
            # fds 0/1 go back to /dev/null and the log.
            devnull = os.open('/dev/null', os.O_RDWR)
            os.dup2(devnull, 0)
            os.close(devnull)
            os.dup2(2, 1)
            return self.give_up_learning('cannot start over: %s' % e)
        return None

    def give_up_learning(self, why):
        """This runner learns nothing more (the host, told it starts over, is answered by this one)."""
        global _LEARNABLE
        _LEARNABLE = ()
        _log('not preloading what programs imported: %s' % why)
        return self.fork_ahead()

    def strays(self):
        """Live processes of ours that are not this runner, a state holder, or a program already
        dying or in exit(): those are killed too (a program that only said it exited must not go on
        forking), but not waited for, so an exit's teardown stays off the answer's way."""
        me, known = os.getpid(), self.not_the_programs()
        return [p for p in _live_pids() if p != 1 and p != me and p not in known]

    def end_strays(self):
        """A fresh call's processes end with it. One that left the program's group (a daemon's
        double fork) would live on into later calls, its connections logged under their programs,
        or its files changing under them. Killed, and waited for until each is dead (its sockets
        closed, so the proxy has logged them) before the end is reported: the host's end-of-call
        marker then comes after their last lines. Waits on SIGCHLD's wake-up, bounded.
        A program that reported its exit is killed too, and under gVisor waited for: gVisor lets a
        fork already under way finish after a SIGKILL (Linux fails it), so a program that only
        said it exited could leave one last child behind the sweep that killed it; that child is
        swept once the program is reaped. Not on Linux, where the wait would put the program's
        teardown (3 ms for a data image's address space) on the answer's way for nothing."""
        me, spare = os.getpid(), self.spared()
        if not [p for p in _live_pids() if p != 1 and p != me and p not in spare]:
            return
        poller = select.poll()
        poller.register(self.wake_r, select.POLLIN)
        deadline = time.monotonic() + DYING_GRACE_S
        while True:
            # kill(-1) too, not pid by pid: a fork bomb's new children are taken with it.
            _kill_all(None, self.spared())
            self.reap(None)
            if not self.strays() and not (self.forks_outlive_kill and self.exiting):
                return
            if time.monotonic() >= deadline:
                _log('processes a program left did not end')
                return
            try:
                poller.poll(100)
            except InterruptedError:
                pass

    def kill_the_rest(self):
        """Kills every other process of the sandbox (kill(-1) from PID 1) and reaps them all; False
        when some are still there after the grace."""
        try:
            os.kill(-1, _SIGKILL)
        except OSError:
            pass
        poller = select.poll()
        poller.register(self.wake_r, select.POLLIN)
        deadline = time.monotonic() + DYING_GRACE_S
        while True:
            self.reap(None)
            try:
                os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.exiting.clear()
                self.dying.clear()
                return True
            except InterruptedError:
                pass
            if time.monotonic() >= deadline:
                return False
            try:
                poller.poll(100)
            except InterruptedError:
                pass

    def supervise(self, rid, req, pid, out_r, err_r, poller, oom_before, link=None, base='', notice=None):
        """Watches the program until it has ended and its output is drained (_Supervision), then
        settles a session call's state and reports the end."""
        w = _Supervision(self, rid, req, pid, out_r, err_r, poller, link, notice)
        w.watch()
        if link is None:
            if notice is not None and self.pages_ahead.looks > 0:
                self.pages_ahead.take(notice.pages())
            self.end_strays()
        state = None
        if link is not None:
            state = self.commit(pid, link, base, w.kept and not (w.killed or w.limited or w.orphans or w.kill_at), w.status, w.unkept)
        # What a fresh program imported of the modules to learn: the runner starts over with them
        # before it reads the next frame (serve), and the host, told so, greets the new runner.
        used = notice.used(_LEARNABLE) if notice is not None else ()
        if used and self.stale() is None:  # else relearn would refuse: the host is not told
            self.learned.update(used)
        preloading = [m for m in self.learn_config if m in self.learned] if link is None else ()
        # The kernel counts an OOM kill before it sends the SIGKILL: a reaped child's is in.
        own_oom = w.own_oom and not w.kept
        reply = exit_reply(w.status, w.killed, w.limited, w.orphans, oom_before, self.oom.read(), state, own_oom, preloading)
        self.channel.send(b'X', rid, reply)
        w.release()
