# The sandbox runner, part 48: PID 1's side of session state (Runner's, as a base class of its):
# which processes are the state's and not a program's, the holder let go, the start of a program
# forked from it, the next program's process forked ahead, PID 1's own check of them, and the end
# of a session call (which holder is the state now). The holder's side is part 60; the child's, part 70.
#
# Forked ahead: once a session call is over and its files are read, the host says so (`a`), and
# the holder forks the next program's process then, off the next call's way (two forks of the
# state and the new process's first writes: 12 ms of a 16 ms way to the program with a small
# state, 31 of 38 with pandas, on a slow VM). The fork runs the state's own at-fork code, so only
# then and only in a sandbox without a network (the host asks only there: a connection made
# after the last call would be in no call's record); both processes are stopped and checked
# before the answer, the child once more before it is given its call, and the holder stays
# stopped through it.


class SessionStateDesk:
    """Runner's session-state methods (it keeps the state in `self.state`, see Runner.__init__)."""

    def spared(self):
        return ((self.state['pid'],) if self.state else ()) + ((self.ahead['pid'],) if self.ahead else ())

    def not_the_programs(self):
        """The processes a session program may find running that are not its doing."""
        return self.spared() + tuple(self.dying) + tuple(self.exiting)

    def drop_state(self):
        """Lets the holder go (a fresh call, a holder that failed): its memory goes back to the sandbox."""
        st, self.state = self.state, None
        self.drop_ahead()
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

    def give_up_before_call(self, why):
        """give_up_state between calls: the next call's reply says why (`dropped`)."""
        self.dropped = why
        self.give_up_state(why)

    def watch_holder(self):
        """Called on each SIGCHLD wake-up: a holder that runs while PID 1 did not let it (a timer or
        signal of its own continued it between calls: a stopped process's parent is told when it
        continues) runs the state's code outside any call. It and everything else goes at once."""
        if self.state is None or self.holder_free:
            return
        for pid in self.spared():
            st = _proc_status(pid)
            if st is not None and st[0] not in (b'T', b't'):
                self.give_up_before_call('ran')
                return

    def kill_holder(self, st):
        """Ends a holder that is no longer the state; it counts as dying until it is reaped."""
        self.own_fds.discard(st['sock'].fileno())
        self.dying.add(st['pid'])
        try:
            os.kill(st['pid'], _SIGKILL)
        except OSError:
            pass
        st['sock'].close()

    def await_start(self, link, holder):
        """The pid of the program `holder` forked, as the program reports it; None when it does not,
        or names a process that is not a grandchild of the holder's (nor PID 1's child already): a
        pid taken on its word is spared from later looks."""
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
                # Said by the state's code: a number kill() takes (pid_max is at most 2**22), or none.
                pid = int(data[1:]) if data[:1] == b'S' and data[1:].isdigit() and len(data) < 10 else 0
                stat = _stat_of(pid) if 1 < pid <= 1 << 22 and pid != holder else None
                if stat and (stat[0] == 1 or (_stat_of(stat[0]) or (0,))[0] == holder):
                    return pid
                return None

    def verify_holder(self, pid, stopped=(), since_mark=False):
        """Stops `pid` and checks it from outside (see holder_problem): None when it may hold the
        state, else why not. `stopped`: an earlier holder the caller stopped first. `since_mark`:
        it has been stopped since its last check (between calls): it must not have run at all."""
        if not _stop_holder(pid, self.wake_r):
            return 'gone' if _proc_status(pid) is None else 'stop'
        if pid == (self.state or {}).get('pid'):
            self.holder_free = False
        ahead = self.ahead if self.ahead and pid == self.ahead['pid'] else None
        mark = _run_mark(pid)
        if since_mark and mark != (ahead['mark'] if ahead else self.holder_mark):
            return 'ran'
        # A holder's middle fork may be reaped by the holder, not by us: it counts as killed only while
        # the process of that number is still the one it was (a later one may get the number).
        self.middles = {p: t for p, t in self.middles.items() if t is not None and (_stat_of(p) or (0, None))[1] == t}
        why = holder_problem(pid, set(stopped), self.dying | set(self.exiting) | set(self.middles))
        if why is None and ahead:
            ahead['mark'] = mark
        elif why is None:
            self.holder_mark = mark
        return why

    def drop_ahead(self):
        a, self.ahead = self.ahead, None
        if a is not None:
            self.kill_holder(a)

    def let_middle_go(self, pid):
        """The process a holder forked `pid` through, while it may still be going away (unmapping a
        large state takes a moment), is not a program's doing: killed now, it runs no code of
        anyone's meanwhile."""
        stat = _stat_of(pid)
        middle = stat[0] if stat and stat[0] not in (0, 1, os.getpid()) else None
        if middle is not None:
            self.middles[middle] = (_stat_of(middle) or (0, None))[1]
            try:
                os.kill(middle, _SIGKILL)
            except OSError:
                pass

    def fork_ahead_of_call(self):
        """The host's `a`: the holder forks the next program's process now. True when it waits,
        stopped and checked, with the holder stopped and checked again; a child that fails is
        killed with whatever else is not the holder, and the holder, checked, stays the state."""
        st = self.state
        if self.ahead is not None:
            return True  # asked again with no call since (a call that ran nothing)
        if st is None or self.native is None:
            return False
        why = self.verify_holder(st['pid'], since_mark=True)
        if why is not None:
            self.give_up_before_call(why)
            return False
        link, theirs = _link_pair()
        self.holder_free = True
        try:
            os.kill(st['pid'], _SIGCONT)
        except OSError:
            pass
        pid = self.await_start(link, st['pid']) if _send(st['sock'], b'A', (theirs.fileno(),)) else None
        theirs.close()
        # The holder first: stopped, it forks nothing more while the child is looked at.
        if not _stop_holder(st['pid'], self.wake_r):
            link.close()
            self.give_up_before_call('stop')
            return False
        # From now on it must not run (a timer of its own could continue it): its last check says so.
        self.holder_mark = _run_mark(st['pid'])
        why = 'start'
        if pid is not None:
            self.ahead = {'pid': pid, 'sock': link, 'mark': None}
            self.own_fds.add(link.fileno())
            self.let_middle_go(pid)
            why = self.adopted(pid)
            if why is not None:
                # Its middle gone, it is not PID 1's: the holder made itself its reaper, and a
                # stopped child of its would run unheard (PID 1 hears only its own children continue).
                self.give_up_before_call(why)
                return False
            why = self.verify_holder(pid, (st['pid'],))
        else:
            link.close()
        if why is not None:
            _log('the process forked ahead of the next call fails the check (%s); that call forks its own' % why)
            self.drop_ahead()
            _kill_all(None, self.spared(), resume=False)
        # Checked whole; and when the child passed, the holder must not have run since its stop (under
        # gVisor, the kills above can move its counters: then the whole check alone).
        why = self.verify_holder(st['pid'], self.spared(), since_mark=self.ahead is not None)
        if why is not None:
            self.give_up_before_call(why)
        return self.ahead is not None

    def adopted(self, pid):
        """None once `pid` is PID 1's child (the middle it was forked through is gone), so that PID 1
        hears it whenever it continues or ends; else why not."""
        deadline = time.monotonic() + HOLDER_STOP_SECONDS
        while True:
            stat = _stat_of(pid)
            if stat is None:
                return 'gone'
            if stat[0] == 1:
                return None
            if stat[0] not in self.middles or time.monotonic() > deadline:
                return 'ran'
            time.sleep(0.001)

    def take_ahead(self, d, out_w, err_w):
        """A session call's start with the next program's process forked ahead: (its pid, its link)
        once it has its call (continued, with its folder and output pipes); None when either process
        ran since its check, or the child ended (the state goes), or the child cannot take it."""
        a, st = self.ahead, self.state
        why = self.verify_holder(a['pid'], self.spared(), since_mark=True)
        if why in ('gone', 'stop'):
            why = 'ran'  # it ended between calls (not yet reaped), or runs: as reap() finds it
        held = _proc_status(st['pid'])
        if why is None and (held is None or held[0] not in (b'T', b't') or _run_mark(st['pid']) != self.holder_mark):
            why = 'ran'
        if why is not None:
            self.give_up_before_call(why)
            return None
        self.ahead = None
        self.own_fds.discard(a['sock'].fileno())
        msg = ('G%s\n%s' % (d, ','.join(str(p) for p in self.not_the_programs()))).encode()
        # The holder stays stopped through the call (it forks nothing for it): one that runs meanwhile
        # (continued by the program) is found at once, and a call that fails leaves it as it was.
        if not _send(a['sock'], msg, (out_w, err_w)):
            self.kill_holder(a)
            return None
        try:
            os.kill(a['pid'], _SIGCONT)
        except OSError:
            pass
        return a['pid'], a['sock']

    def commit(self, pid, link, base, keep, status, unkept):
        """The end of a session call: the program that is now a holder replaces the previous one
        (killed only now), or, when the call did not succeed, the previous holder stays. Either
        way the holder is stopped and checked by PID 1 first (verify_holder): the program said it
        was kept, and what the program says is not taken."""
        dropped, self.dropped = self.dropped, None
        # Whether the holder ran during the call (it forked the program): else it must not have.
        held = not self.holder_free
        if self.state is not None:
            self.let_middle_go(pid)
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
                dropped = self.verify_holder(self.state['pid'], since_mark=held)
                if dropped is not None:
                    self.give_up_state(dropped)
        now, holder = (self.state['id'], self.state['pid']) if self.state else ('', 0)
        return state_reply(base, now, keep, holder, None if keep or status != 0 else unkept, dropped)
