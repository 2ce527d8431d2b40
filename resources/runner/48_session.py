# The sandbox runner, part 48: PID 1's side of session state (Runner's, as a base class of its):
# which processes are the state's and not a program's, the holder let go, the start of a program
# forked from it, PID 1's own check of it, and the end of a session call (which holder is the
# state now). The holder's side is part 60; the child's, part 70.


class SessionStateDesk:
    """Runner's session-state methods (it keeps the state in `self.state`, see Runner.__init__)."""

    def spared(self):
        return (self.state['pid'],) if self.state else ()

    def not_the_programs(self):
        """The processes a session program may find running that are not its doing."""
        return self.spared() + tuple(self.dying) + tuple(self.exiting)

    def drop_state(self):
        """Lets the holder go (a fresh call, a holder that failed): its memory goes back to the sandbox."""
        st, self.state = self.state, None
        self.holder_free = False
        self.holder_mark = None
        if st is not None:
            self.kill_holder(st)

    def give_up_state(self, why):
        """The holder failed PID 1's check: the state goes, and with it every process of the sandbox
        (whatever made the check fail runs no further)."""
        _log('the state holder fails the check (%s); its state is given up' % why)
        self.drop_state()
        try:
            os.kill(-1, _SIGKILL)
        except OSError:
            pass

    def watch_holder(self):
        """Called on each SIGCHLD wake-up: a holder that runs while PID 1 did not let it (a timer or
        signal of its own continued it between calls: a stopped process's parent is told when it
        continues) runs the state's code outside any call. It and everything else goes at once."""
        if self.state is None or self.holder_free:
            return
        st = _proc_status(self.state['pid'])
        if st is not None and st[0] not in (b'T', b't'):
            self.give_up_state('ran')
            self.dropped = 'ran'

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

    def verify_holder(self, pid, stopped=(), since_mark=False):
        """Stops `pid` and checks it from outside (see holder_problem): None when it may hold the
        state, else why not. `stopped`: an earlier holder the caller stopped first. `since_mark`:
        it has been stopped since its last check (between calls): it must not have run at all."""
        if not _stop_holder(pid, self.wake_r):
            return 'gone' if _proc_status(pid) is None else 'stop'
        if pid == (self.state or {}).get('pid'):
            self.holder_free = False
        mark = _run_mark(pid)
        if since_mark and mark != self.holder_mark:
            return 'ran'
        # A holder's middle fork may be reaped by the holder, not by us: it counts as killed only while
        # the process of that number is still the one it was (a later one may get the number).
        self.middles = {p: t for p, t in self.middles.items() if t is not None and (_stat_of(p) or (0, None))[1] == t}
        why = holder_problem(pid, set(stopped), self.dying | set(self.exiting) | set(self.middles))
        if why is None:
            self.holder_mark = mark
        return why

    def commit(self, pid, link, base, keep, status, unkept):
        """The end of a session call: the program that is now a holder replaces the previous one
        (killed only now), or, when the call did not succeed, the previous holder stays. Either
        way the holder is stopped and checked by PID 1 first (verify_holder): the program said it
        was kept, and what the program says is not taken."""
        dropped, self.dropped = self.dropped, None
        # The process an earlier holder forked it through may still be going away (unmapping a
        # large state takes a moment): not the program's doing. It goes now, whatever it was doing.
        stat = _stat_of(pid) if self.state is not None else None
        middle = stat[0] if stat and stat[0] not in (0, 1, os.getpid()) else None
        if middle is not None:
            # It has nothing left to do but exit; killed now, it runs no code of anyone's meanwhile.
            self.middles[middle] = (_stat_of(middle) or (0, None))[1]
            try:
                os.kill(middle, _SIGKILL)
            except OSError:
                pass
        if keep:
            # The holder it was forked from runs the state's code (it forked this program): stopped
            # before the look, it cannot start anything after it.
            if self.state is not None:
                _stop_holder(self.state['pid'], self.wake_r)
            why = self.verify_holder(pid, self.spared())
            if why is not None:
                _log('a program said it was kept, and its process fails the check (%s): not kept' % why)
                keep, unkept = False, why
        if keep:
            old = self.state
            self.state = {'pid': pid, 'sock': link, 'id': os.urandom(4).hex()}
            self.own_fds.add(link.fileno())
            if old is not None:
                self.kill_holder(old)
            self.holder_free = False
        else:
            # Nothing a call that is not kept started may outlive it: it would make every later
            # call unkeepable (processes), and the state is to be as the last kept call left it.
            # The old holder stays stopped: it is checked right after, and continued it could fork.
            _kill_all(pid, self.spared(), resume=False)
            link.close()
            if status == 0 and unkept is None:
                unkept = 'link'  # exited 0 without saying it was kept (it closed its link)
            # The state stays only as it was: the holder ran during the call (it forked the program).
            if self.state is not None:
                dropped = self.verify_holder(self.state['pid'])
                if dropped is not None:
                    self.give_up_state(dropped)
        now, holder = (self.state['id'], self.state['pid']) if self.state else ('', 0)
        return state_reply(base, now, keep, holder, None if keep or status != 0 else unkept, dropped)
