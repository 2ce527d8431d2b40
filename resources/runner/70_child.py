# The sandbox runner, part 70.
# The child. It becomes `python3 <dir>/program.py` as seen from inside, runs the file (at this
# file's module level, see the end), and ends as `python3 file` ends: PyErr_Print for an
# exception that escaped, then Py_FinalizeEx (threads, atexit, flushing, the program's modules
# torn down in CPython's order), then exit(). Only the teardown of what was preloaded is skipped:
# it is what made exiting cost a tenth of a second, and nothing of the program's lives there.
def _unraisable_type():
    seen = []
    hook = sys.unraisablehook
    sys.unraisablehook = seen.append

    class _Probe:
        def __del__(self):
            raise RuntimeError

    _Probe()
    sys.unraisablehook = hook
    return type(seen[0]) if seen else None


def _write_stderr(text):
    err = getattr(sys, 'stderr', None)
    if err is not None:
        try:
            err.write(text)
            return
        except Exception:  # noqa: BLE001
            pass
    try:
        os.write(2, text.encode('utf-8', 'backslashreplace'))
    except OSError:
        pass


def _flush_io():
    for name in ('stderr', 'stdout'):
        f = getattr(sys, name, None)
        if f is not None:
            try:
                f.flush()
            except Exception:  # noqa: BLE001
                pass


def _exit_status(value):
    """_Py_HandleSystemExit: the code of a SystemExit (printed when it is not an int)."""
    code = getattr(value, 'code', value)
    if code is None:
        return 0
    if isinstance(code, int):
        try:
            return ctypes.c_int(ctypes.c_long(code).value).value
        except OverflowError:
            return -1
    err = getattr(sys, 'stderr', None)
    if err is not None:
        try:
            err.write(str(code))
        except Exception:  # noqa: BLE001
            pass
    else:
        _write_stderr(str(code))
    _write_stderr('\n')
    return 1


class _Exit(Exception):
    def __init__(self, status):
        self.status = status


def _module_clear(d):
    for key in list(d):
        if isinstance(key, str) and key[:1] == '_' and key[1:2] != '_' and d.get(key) is not None:
            d[key] = None
    for key in list(d):
        if isinstance(key, str) and key != '__builtins__' and d.get(key) is not None:
            d[key] = None


# Where a chat's prepared image holds the packages its programs installed
# (src/docker/images/chatImage.ts, CHAT_SITE).
_CHAT_SITE = '/opt/codeact-sandbox/chat-site'


def _late_sites():
    """Site folders a program sees and the runner never reads: the user site once pip has made
    it (a fresh interpreter adds it when the folder exists as it starts; the runner started before
    any program ran), and a chat's prepared packages. Each goes where a fresh interpreter puts the
    user site: before the image's site directories. Their .pth files run here, in the program's
    process, as they would in `python3 program.py`."""
    site = sys.modules.get('site')
    if site is None:  # python3 -S: no site directories at all
        return
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    want = [d for d in (user, _CHAT_SITE) if d and d not in sys.path and os.path.isdir(d)]
    if not want:
        return
    n = len(sys.path)
    for d in want:
        site.addsitedir(d)
    added = sys.path[n:]
    del sys.path[n:]
    dirs = site.getsitepackages()
    k = next((i for i, p in enumerate(sys.path) if p in dirs), len(sys.path))
    sys.path[k:k] = added


def _exec_program(d, out_w, err_w):
    """In a child of PID 1: becomes `python3 <d>/program.py` by exec, started as `docker exec` starts
    it (the environment the runner started with, default signal dispositions, nothing blocked, no
    descriptor but 0-2), in a session of its own. Never returns."""
    try:
        os.setsid()
        null = os.open('/dev/null', os.O_RDONLY)
        os.dup2(null, 0, inheritable=True)
        os.dup2(out_w, 1, inheritable=True)
        os.dup2(err_w, 2, inheritable=True)
        for fd in os.listdir('/proc/self/fd'):
            if int(fd) > 2:
                try:
                    os.close(int(fd))
                except OSError:
                    pass
        _signal.set_wakeup_fd(-1)
        for s in _signal.valid_signals():
            try:
                _signal.signal(s, _signal.SIG_DFL)
            except (OSError, ValueError):
                pass  # SIGKILL, SIGSTOP
        _signal.pthread_sigmask(_signal.SIG_SETMASK, ())
        os.chdir(d)
        path = d + '/program.py'
        os.execvpe('python3', ['python3', path], _START_ENV)
    except BaseException as e:  # noqa: BLE001 - nothing of the runner's may run on in this child
        try:
            os.write(2, ('python3: cannot start %s: %s\n' % (d, e)).encode('utf-8', 'backslashreplace'))
        finally:
            os._exit(127)


class Program:
    """In a forked child: what it takes from the runner to become the program, and its end."""

    def __init__(self, spec, native, depth, keep_fds, own_fds, argv_area, path_tail, hook_args_type):
        # `exit_notice`: a fresh program's shared page for its exit status (None in session mode);
        # `fork_modules`: what it starts with (ForkModules); `ctl`: a session program's link to
        # PID 1 (None in fresh mode); `spare`: the holder it may leave running (the one it was
        # forked from), for the check of what it left.
        # `wait_fd`: a child forked ahead reads its run's directory there (None: it has it already).
        self.dir, self.out_w, self.err_w, self.exit_notice, self.fork_modules, self.ctl, self.spare, self.wait_fd = spec
        self.adj = None
        # The program's own memory limit (soft RLIMIT_AS), None where it has none; the soft limits
        # it replaced, for a holder to set back.
        self.own_limit = None
        self.limits_before = ()
        self.out_pipes = ()
        self.native = native
        self.depth = depth
        self.keep_fds = keep_fds
        self.own_fds = own_fds
        self.argv_area = argv_area
        self.path_tail = path_tail
        self.hook_args_type = hook_args_type
        self.path = None if self.dir is None else (self.dir + '/program.py').encode()
        # A child forked ahead that PID 1 asks to look at the pages it copied: its mappings at the fork.
        self.look_ranges = None

    def become(self):
        """Turns this process into `python3 <dir>/program.py` as seen from inside. A child forked
        ahead does what does not depend on the run first, then waits for its directory."""
        # What the runner made since it froze its preloads goes to the permanent generation too
        # (the ForkModules copies, its own state): the program's collections, and the one at its
        # end, walk only what the program made. Walking the rest wrote its pages, each a
        # copy-on-write fault (3.5 ms of a warm call under gVisor, data image). A forked session
        # program does not do this: the state's garbage must stay collectable across calls.
        gc.freeze()
        os.setsid()
        null = os.open('/dev/null', os.O_RDONLY)
        os.dup2(null, 0, inheritable=True)
        os.dup2(self.out_w, 1, inheritable=True)
        os.dup2(self.err_w, 2, inheritable=True)
        ctl = self.ctl.fileno() if self.ctl is not None else -1
        for fd in os.listdir('/proc/self/fd'):
            fd = int(fd)
            if fd > 2 and fd != ctl and fd != self.wait_fd and (fd not in self.keep_fds or fd in self.own_fds):
                try:
                    os.close(fd)
                except OSError:
                    pass
        _signal.set_wakeup_fd(-1)
        _signal.signal(_SIGCHLD, _signal.SIG_DFL)
        # A fresh interpreter seeds numpy's global generator from the OS; a fork would repeat ours.
        # (`random` reseeds itself after fork.)
        np_random = sys.modules.get('numpy.random')
        if np_random is not None:
            np_random.seed()
        if self.wait_fd is not None:
            # Named while it waits, so that whoever counts the sandbox's processes can tell it from
            # a program (comm is the name `ps` shows); a program has the interpreter's name.
            self.native.set_name(WAITING_NAME)
            # While it waits: a first look at sys.modules and the copies of its names, as the end
            # of the program will look. Under gVisor each page a forked process first touches, read
            # or written, costs a fault its kernel handles; taken now, they are off the call's path
            # (request to first statement 10.9 to 9.2 ms, data image; no change on runc).
            self.fork_modules.added(sys.modules, ('__main__',))
            self.rehearse()
            _touch_ahead(self.native.libc, _TOUCH_RUNS, self.wait_fd)
            if _TOUCH_LOOK and self.exit_notice is not None:
                self.look_ranges = _writable_private('self')
            self.dir = self._await_run()
            self.native.set_name(self.native.name)
            self.path = (self.dir + '/program.py').encode()
        _signal.signal(_SIGINT, _signal.default_int_handler)
        self.native.set_dumpable(True)
        if self.ctl is not None:
            self.session_start()
        path = self.path.decode()
        self.set_argv()
        os.chdir(self.dir)
        sys.argv[:] = [path]
        try:
            sys.orig_argv[:] = ['python3', path]
        except AttributeError:
            pass
        sys.path[:] = [self.dir] + self.path_tail
        _late_sites()
        # A fresh __main__, as the interpreter makes it before running a file.
        import builtins

        main = type(sys)('__main__')
        main.__loader__ = sys.modules['__main__'].__dict__.get('__loader__')
        main.__annotations__ = {}
        main.__builtins__ = builtins
        sys.modules['__main__'] = main

    def rehearse(self):
        """While it waits: the steps from its run's directory to the program's first statement, on
        values that change nothing a program can see (its name and argument strings written as they
        are, a module and a loader dropped, an empty file parsed, compiled and run in a namespace of
        its own). Under gVisor, the first touch of each page in a forked process is a fault its
        kernel handles, code pages included; the steps touch the same ones, so those faults come
        before the run, not on its way."""
        import builtins

        native = self.native
        native.set_dumpable(False)
        if self.argv_area is not None:
            start, end = self.argv_area
            ctypes.memmove(start, ctypes.string_at(start, end - start), end - start)
        main = type(sys)('__main__')
        main.__annotations__ = {}
        main.__builtins__ = builtins
        main.__loader__ = sys.modules['_frozen_importlib_external'].SourceFileLoader('__main__', '/dev/null')
        fp = native.libc.fopen(b'/dev/null', b'rb')
        if fp:
            native.pyrun(fp, b'/dev/null', 257, main.__dict__, main.__dict__, 1, native.cflags)

    def _await_run(self):
        """The run's directory, from PID 1; a runner that closes the pipe instead has no run for us."""
        data = b''
        while not data.endswith(b'\n'):
            try:
                chunk = os.read(self.wait_fd, 4096)
            except InterruptedError:
                continue
            except OSError:
                chunk = b''
            if not chunk:
                os._exit(0)
            data += chunk
        os.close(self.wait_fd)
        self.wait_fd = None
        return data[:-1].decode()

    def set_argv(self):
        if self.argv_area is not None:
            want = b'python3\0' + self.path + b'\0'
            start, end = self.argv_area
            size = end - start
            if len(want) <= size:
                ctypes.memmove(start, want + b'\0' * (size - len(want)), size)

    def session_start(self):
        """A session program (now dumpable, so /proc/self is its own) is the OOM killer's first
        choice; what it writes to its output pipes is known by their inodes (see hold)."""
        self.adj = _oom_adj()
        _oom_adj(1000)
        if _OWN_LIMIT:
            self.limit_memory()
        pipes = []
        for fd in (1, 2):
            st = os.fstat(fd)
            pipes.append((st.st_dev, st.st_ino))
        self.out_pipes = tuple(pipes)

    def limit_memory(self):
        """Where the OOM killer cannot pick the program (see own_limits), a hog meets its own
        limit, as a MemoryError, and a fork bomb its own process budget, before the sandbox's.
        Soft limits only, so that a holder can hand the next program larger ones (a program
        that raises its own could as well kill the holder: this is for mistakes, not malice)."""
        try:
            with open('/proc/self/status') as f:
                status = f.read()
            with open('/proc/meminfo') as f:
                meminfo = f.read()
            limits = own_limits(status, meminfo, _tasks())
        except OSError:
            return
        libc = self.native.libc
        self.own_limit, self.limits_before = None, ()
        for which, soft in zip((_RLIMIT_AS, _RLIMIT_NPROC), limits or ()):
            before = _rlimit(libc, which)
            if before is not None and _rlimit(libc, which, soft) is not None:
                self.limits_before += ((which, before),)
                if which == _RLIMIT_AS:
                    self.own_limit = soft

    def unkeepable(self):
        """Why this process cannot be kept as the state: what it left running would go on in the
        holder (threads, processes) or be shared with every later call (sockets). None: it can."""
        threading = sys.modules.get('threading')
        try:
            if threading is not None and threading.active_count() > 1:
                return 'threads'
        except Exception:  # noqa: BLE001
            return 'threads'
        if not _fork_safe_threads():  # native threads (a BLAS pool that stops at fork is fine)
            return 'threads'
        me = os.getpid()
        if any(p not in (1, me) and p not in self.spare for p in _live_pids()):
            return 'processes'
        ctl = self.ctl.fileno()
        for fd in os.listdir('/proc/self/fd'):
            try:
                target = os.readlink('/proc/self/fd/' + fd)
            except OSError:
                continue
            if target.startswith('socket:') and int(fd) != ctl:
                return 'sockets'
        return None

    def hold(self):
        """Becomes the state holder once the program succeeded; returns None when it cannot be kept
        (PID 1 is told why, and the program ends as usual). In the holder, it waits for PID 1's
        fork requests, and returns only in the process of the next program, ready to run it."""
        # Whatever runs the program's objects comes before the checks: the flush of its sys.stdout,
        # the names of its sys.modules (a key's own hash), its `random`. Code of the program's that
        # runs after them (it can replace them, and the runner's own functions) is PID 1's to
        # catch: it stops and checks this process once it says it is kept (Runner.verify_holder).
        flushed = self._flush_std_files()
        # What each next program starts with, made once.
        forked = ForkModules(sys.modules)
        random = sys.modules.get('random')
        try:
            seed = random.getstate() if random is not None else None
        except Exception:  # noqa: BLE001 - the program's own `random`, replaced
            random = seed = None
        why = self.unkeepable()
        if why is None and flushed < 0:
            why = 'flush'
        if why:
            _send(self.ctl, b'N' + why.encode())
            return None
        _learn_session_pages(self.look_ranges)
        # This call's output pipes must close (PID 1 waits for their end), even where the program
        # kept a copy of the descriptor: every such descriptor now points at /dev/null.
        null = os.open('/dev/null', os.O_RDWR)
        for fd in os.listdir('/proc/self/fd'):
            fd = int(fd)
            try:
                st = os.fstat(fd)
            except OSError:
                continue
            if fd != null and (st.st_dev, st.st_ino) in self.out_pipes:
                os.dup2(null, fd, inheritable=fd <= 2)
        os.close(null)
        # Set back before the process stops being dumpable: /proc/self is root's after that.
        if self.adj is not None:
            _oom_adj(self.adj)
        for which, soft in self.limits_before:
            _rlimit(self.native.libc, which, soft)
        # Dumpable while it is only the state, stopped between calls (nothing else of the sandbox
        # runs then): PID 1 reads its descriptors from outside. Not dumpable from the first fork
        # request on (below), like the runner: the program it forks may not read or write the state
        # through /proc (ptrace, mem).
        _signal.signal(_SIGINT, _signal.SIG_IGN)
        # Between calls the state runs no code of its own: a timer the program set, or a signal
        # a handler of its own waits for, would run its code (a connection, a write) outside any
        # call and its record. Timers go; signals wait, blocked, for the next program, which
        # gets them (and its handlers) as its own.
        for timer in (_signal.ITIMER_REAL, _signal.ITIMER_VIRTUAL, _signal.ITIMER_PROF):
            _signal.setitimer(timer, 0)
        self.held_mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, _signal.valid_signals())
        if not _send(self.ctl, b'K'):
            os._exit(0)
        # PID 1 stops this process now, and continues it for each fork it asks for: a program's
        # (F: its folder, pipes and link) or one ahead of its call (A: its link alone).
        while True:
            data, fds = _recv(self.ctl, 3)
            if not data:
                os._exit(0)  # PID 1 let go of this state
            if (data[:1], len(fds)) not in ((b'F', 3), (b'A', 1)):
                for fd in fds:
                    os.close(fd)
                continue
            d, _, spare = data[1:].decode('ascii', 'replace').partition('\n')
            self.native.set_dumpable(False)
            try:
                pid = os.fork()
            except OSError:
                pid = -1
            if pid == 0:
                try:
                    if os.fork():
                        os._exit(0)
                except OSError:
                    os._exit(1)
                # The grandchild, reparented to PID 1 as soon as its parent is gone.
                self.look_ranges = None
                if data[:1] == b'A':
                    # The pages its call will write, copied and read now: off that call's way.
                    _touch_ahead(self.native.libc, _TOUCH_RUNS, None)
                    self.look_ranges = _writable_private('self') if _session_looks() else None
                    # Dumpable before it says it is there, as the program it becomes is: PID 1
                    # reads its descriptors from outside while it waits. Named as a fresh child
                    # forked ahead is while it waits, and then as the holder it was forked from.
                    self.native.set_dumpable(True)
                    comm = (_read_whole('/proc/self/comm') or b'python3\n').rstrip(b'\n')
                    self.native.set_name(WAITING_NAME)
                self.adopt_link(fds[-1])
                if data[:1] == b'A':
                    d, spare, fds = self.await_call()
                    self.native.set_name(comm)
                return self.next_program(d, fds[0], fds[1], tuple(int(p) for p in spare.split(',') if p.isdigit()), random, seed, forked)
            for fd in fds:
                os.close(fd)
            if pid > 0:
                while True:
                    try:
                        os.waitpid(pid, 0)
                        break
                    except InterruptedError:
                        continue
                    except ChildProcessError:
                        break

    def adopt_link(self, ctl):
        """In a process forked from a holder: its own session and link to PID 1 (not the holder's),
        over which it says its pid."""
        os.setsid()
        old = self.ctl.detach()
        os.close(old)
        self.ctl = _sock.socket(fileno=ctl)
        _send(self.ctl, b'S%d' % os.getpid())

    def await_call(self):
        """Forked ahead: waits (PID 1 stops and checks it meanwhile) for its call's folder, the
        processes that are not its doing, and its output pipes."""
        data, fds = _recv(self.ctl, 2)
        if data[:1] != b'G' or len(fds) != 2:
            os._exit(0)  # no call for it: PID 1 let it go
        d, _, spare = data[1:].decode('ascii', 'replace').partition('\n')
        return d, spare, fds

    def next_program(self, d, out_w, err_w, spare, random, seed, forked):
        """In a process forked from a holder: becomes the next program, on the holder's __main__."""
        null = os.open('/dev/null', os.O_RDONLY)
        os.dup2(null, 0, inheritable=True)
        os.close(null)
        os.dup2(out_w, 1, inheritable=True)
        os.dup2(err_w, 2, inheritable=True)
        os.close(out_w)
        os.close(err_w)
        _signal.signal(_SIGINT, _signal.default_int_handler)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, self.held_mask)
        self.native.set_dumpable(True)
        prev = self.dir
        # The holder, and our parent until its exit is through (it only calls _exit, but unmapping
        # a large state takes a moment): neither is something the program left.
        self.dir, self.spare = d, spare + (os.getppid(),)
        self.path = (d + '/program.py').encode()
        self.session_start()
        self.set_argv()
        os.chdir(d)
        path = self.path.decode()
        sys.argv[:] = [path]
        try:
            sys.orig_argv[:] = ['python3', path]
        except AttributeError:
            pass
        sys.path[:] = [d if p == prev else p for p in sys.path]
        _late_sites()
        # The program's own streams, whatever the last call left in sys.stdout (as a kernel does).
        for name in ('stdin', 'stdout', 'stderr'):
            orig = getattr(sys, '__%s__' % name, None)
            if orig is not None:
                setattr(sys, name, orig)
        # `random` reseeds itself after a fork; the state's generator goes on where it was instead.
        if random is not None and seed is not None:
            random.setstate(seed)
        self.fork_modules = forked
        self.exit_notice = None  # the page of the run this holder came from, which nobody reads now
        return self

    def open_main(self):
        """The program's globals and its open file, as `python3 file` has them before the first line."""
        path = self.path.decode()
        main = sys.modules['__main__'].__dict__
        main['__file__'] = path
        main['__cached__'] = None
        main['__loader__'] = sys.modules['_frozen_importlib_external'].SourceFileLoader('__main__', path)
        fp = self.native.libc.fopen(self.path, b'rb')
        if not fp:
            errno = ctypes.get_errno()
            _write_stderr("python3: can't open file %r: [Errno %d] %s\n" % (path, errno, os.strerror(errno)))
            self.native.libc.exit(2)
        return main, fp

    def finish(self, ending):
        """What follows the program's last statement; never returns, except in session mode, in the
        process of the next program forked from this one once it is the state. `ending` holds the program's
        exception (or None) and namespace, and is emptied: as in `python3 file`, the program's
        objects die when its modules are torn down (their __del__ runs then), not before."""
        exc, main_dict = ending
        ending.clear()
        if self.own_limit is not None and isinstance(exc, MemoryError):
            # It reached its own limit: room for its traceback and exit, and PID 1 tells the host.
            _rlimit(self.native.libc, _RLIMIT_AS, self.own_limit + OWN_LIMIT_EXIT_ROOM)
            _send(self.ctl, b'M')
        status = 0
        sigint = False
        try:
            _flush_io()
            if exc is not None:
                if exc.__traceback__ is not None:
                    exc.__traceback__ = exc.__traceback__.tb_next  # our frame, which `python3 file` has not
                if isinstance(exc, SystemExit):
                    # PyErr_Print -> Py_Exit: __file__ is still set while atexit handlers run.
                    status = _exit_status(exc)
                else:
                    sigint = type(exc) is KeyboardInterrupt
                    status = 1
                    self._print_error(exc)
                    main_dict.pop('__file__', None)
                    main_dict.pop('__cached__', None)
            else:
                main_dict.pop('__file__', None)
                main_dict.pop('__cached__', None)
        except _Exit as e:
            status = e.status
        del exc, main_dict
        if self.ctl is not None and status == 0:
            following = self.hold()
            if following is not None:
                return following
        # Which modules the runner may learn this program imported (fresh mode), read before
        # finalizing empties sys.modules: a few dict lookups, not a walk of every module.
        used = [m for m in _LEARNABLE if m in sys.modules] if self.exit_notice is not None else ()
        status = self._finalize(status)
        if sigint:
            _signal.signal(_SIGINT, _signal.SIG_DFL)
            os.kill(os.getpid(), _SIGINT)
            status = 130
        self.native.libc.fflush(None)
        if self.exit_notice is not None:
            if used:
                ExitNotice.write_used(self.exit_notice, used)
            if self.look_ranges:
                copied = _look_at_own_pages(self.look_ranges)
                if copied:
                    ExitNotice.write_pages(self.exit_notice, copied)
            ctypes.c_uint32.from_address(self.exit_notice + 4).value = status & 0xFFFFFFFF
            ctypes.c_uint32.from_address(self.exit_notice).value = ExitNotice.MAGIC
            for fd in (1, 2):
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.native.libc.exit(status)

    def _unraisable(self, exc, obj, msg=None):
        hook = getattr(sys, 'unraisablehook', None)
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        if hook is not None and self.hook_args_type is not None:
            try:
                hook(self.hook_args_type((type(exc), exc, tb, msg, obj)))
                return
            except Exception:  # noqa: BLE001
                pass
        _write_stderr('Exception ignored in: %r\n' % (obj,))

    def _flush_std_files(self):
        status = 0
        for name in ('stdout', 'stderr'):
            f = getattr(sys, name, None)
            if f is None:
                continue
            try:
                closed = f.closed
            except Exception:  # noqa: BLE001
                closed = False
            if closed:
                continue
            try:
                f.flush()
            except Exception as e:  # noqa: BLE001
                if name == 'stdout':
                    self._unraisable(e, f)
                status = -1
        return status

    def _print_error(self, value):
        """PyErr_Print for an exception other than SystemExit (which the caller handles)."""
        t, tb = type(value), value.__traceback__
        sys.last_type, sys.last_value, sys.last_traceback = t, value, tb
        if sys.version_info >= (3, 12):
            sys.last_exc = value
        hook = getattr(sys, 'excepthook', None)
        try:
            sys.audit('sys.excepthook', hook if hook is not None else None, t, value, tb)
        except Exception:  # noqa: BLE001
            pass
        if hook is None:
            _write_stderr('sys.excepthook is missing\n')
            sys.__excepthook__(t, value, tb)
            return
        try:
            hook(t, value, tb)
        except SystemExit as e:
            raise _Exit(_exit_status(e)) from None
        except BaseException as e:  # noqa: BLE001
            e.__traceback__ = e.__traceback__.tb_next if e.__traceback__ is not None else None
            _write_stderr('Error in sys.excepthook:\n')
            sys.__excepthook__(type(e), e, e.__traceback__)
            _write_stderr('\nOriginal exception was:\n')
            sys.__excepthook__(t, value, tb)

    def _finalize(self, status):
        """Py_FinalizeEx, for everything the program made; returns the exit status."""
        import _weakref

        threading = sys.modules.get('threading')
        if threading is not None:
            try:
                threading._shutdown()
            except BaseException as e:  # noqa: BLE001
                self._unraisable(e, threading)
        atexit._run_exitfuncs()
        if self._flush_std_files() < 0:
            status = 120
        # finalize_modules, restricted to the modules the program imported and __main__.
        builtins = sys.modules['builtins']
        builtins._ = None
        for name in ('path', 'argv', 'ps1', 'ps2', 'last_type', 'last_value', 'last_traceback', 'last_exc',
                     'path_hooks', 'path_importer_cache', 'meta_path', '__interactivehook__'):
            if name != 'last_exc' or sys.version_info >= (3, 12):
                setattr(sys, name, None)
        for name in ('stdin', 'stdout', 'stderr'):
            orig = getattr(sys, '__%s__' % name, None)
            if orig is not None:
                setattr(sys, name, orig)
        modules = sys.modules
        weak = []
        for name in self.fork_modules.added(modules, ('__main__',)):
            mod = modules[name]
            if isinstance(mod, type(sys)):
                weak.append(_weakref.ref(mod))
            modules[name] = None
        # Our own name for the last of them must not keep it alive through the collection below:
        # a module that is only garbage goes with it, its globals intact while finalizers run.
        mod = None
        bdict = builtins.__dict__
        if bdict != _BUILTINS_COPY:
            bdict.clear()
            bdict.update(_BUILTINS_COPY)
        gc.collect()
        for ref in reversed(weak):
            mod = ref()
            if mod is not None:
                _module_clear(mod.__dict__)
        del weak
        gc.collect()
        if self._flush_std_files() < 0:
            status = 120
        return status
