# The sandbox runner, part 80: main(), stage 0 or the set-up of stage 1.
def main():
    """Stage 0 hands over to stage 1 (an exec: it never returns). Stage 1 sets up and serves for
    good; it returns only in a forked child, with the Program that child is to become."""
    if '_CODEACT_STAGE' not in globals():
        _stage0_exec(sys.argv[1] if len(sys.argv) > 1 else '')
    # Stage 1. Everything a program could see of this process is kept as `python3 file` has it.
    cfg = _stage1_setup()
    preload = [m for m in cfg.get('preload', '').split(',') if m]
    learn = [m for m in cfg.get('learn', '').split(',') if m]
    noted_dirty = [m for m in cfg.get('dirty', '').split(',') if m]
    chan_in, chan_out, devnull = _move_channel()

    native = unusable = None
    try:
        native = _Native()
    except Exception as e:  # no ctypes/libffi, an exotic libc: stay a keeper and say so
        unusable = 'runner unavailable: %s: %s' % (type(e).__name__, e)
        _log(unusable)

    # sys.path as a script would have it, minus its first entry (the script's directory), which
    # each child sets. `-c` put '' (the current directory) there: preloading must not look in it.
    if sys.path and sys.path[0] in ('', os.getcwd()):
        del sys.path[0]
    sys.path_importer_cache.pop('', None)
    path_tail = list(sys.path)

    keep_fds, preloaded, missing = _preload_or_restart(preload, learn, native is not None, noted_dirty, chan_in, chan_out)

    # Everything preloaded goes to the permanent generation: a child's collections (and its exit)
    # never walk it, so they cost what the program's own objects cost, and its pages stay shared.
    gc.collect()
    gc.freeze()

    hook_args_type = _unraisable_type()
    # Modules a fresh `python3 program.py` would not have: a file of the same name next to the
    # program would shadow them there, but not here (they are already imported).
    # (Built-in modules are found before sys.path is searched: nothing shadows them.)
    extra = _extra_modules() - set(sys.builtin_module_names)
    argv_area = _argv_area()

    runner = Runner(Channel(chan_in, chan_out), unusable, preloaded, missing, noted_dirty, extra, {devnull})
    runner.native = native
    runner.forks_outlive_kill = native is not None and _forks_outlive_kill(native.libc)
    runner.preload_config = preload
    runner.learn_config = learn
    # Not learnable: what is preloaded already, what was tried and is not there or not kept
    # (learning it again would start the runner over after every call).
    global _LEARNABLE
    tried = set(preload) | {d.split('(')[0] for d in noted_dirty}
    _LEARNABLE = tuple(m for m in learn if m not in tried and m not in sys.modules)
    if unusable:
        runner.serve_unusable()

    depth = _RecursionDepth(native)
    runner.problem = depth.calibrate()
    if runner.problem:
        _log(runner.problem)
    # The probes' children were reaped by waitpid; drain their SIGCHLD wake-ups.
    runner.reap(None)

    program = Program(runner.serve(), native, depth, keep_fds, runner.own_fds, argv_area, path_tail, hook_args_type)
    program.become()
    return program


def _stage1_setup():
    """Stage 1's first steps: the hand-over pipe closed, the config read, the work area laid out,
    SIGINT ignored. Returns the config."""
    try:
        os.close(3)
    except OSError:
        pass
    cfg = parse_config(_CODEACT_CONFIG)  # noqa: F821 (set by stage 0)
    # A memory cgroup we can see is one whose OOM killer picks the program (its oom_score_adj);
    # none (gVisor) is a sandbox that would end whole, so session programs get limits of their own.
    global _OWN_LIMIT
    _OWN_LIMIT = read_oom_kills() is None

    # The work area's layout (the host does the same; whoever is first wins, both are idempotent).
    for d in ('/sandbox/home', '/sandbox/tmp', RUNS):
        try:
            os.makedirs(d, 0o700, exist_ok=True)
        except OSError as e:
            _log('cannot create %s: %s' % (d, e))

    # Python handles SIGINT (KeyboardInterrupt); PID 1 must not, or a program could stop the runner
    # with kill(1, SIGINT). Every other signal has no handler here, so the kernel drops them.
    _signal.signal(_SIGINT, _signal.SIG_IGN)
    return cfg


def _move_channel():
    """The channel off fds 0/1: stray prints of preloaded modules go to stderr (the host's log), and
    a child's 0/1/2 are simply replaced. Returns the channel's two fds and /dev/null's."""
    chan_in = os.dup(0)
    chan_out = os.dup(1)
    devnull = os.open('/dev/null', os.O_RDWR | os.O_CLOEXEC)
    os.dup2(devnull, 0, inheritable=True)
    os.dup2(2, 1, inheritable=True)
    return chan_in, chan_out, devnull


def _preload_or_restart(preload, learn, usable, noted_dirty, chan_in, chan_out):
    """Preloads (only with a usable runner); a module whose import was not invisible sends the
    runner back to stage 0 without it. Returns the fds preloading left open, and what was and was
    not preloaded."""
    fds_before = _open_fds()
    preloaded, missing, dirty = _preload(preload if usable else [])
    # Descriptors a preloaded module keeps open (a fresh import would have them too): children keep them.
    keep_fds = _open_fds() - fds_before
    if dirty:
        # Start over without the module: this process can no longer be what a fresh one would be.
        bad = dirty[0].split('(')[0]
        _log('not preloading %s: %s' % (bad, dirty[0]))
        os.dup2(chan_in, 0)
        os.dup2(chan_out, 1)
        _start_over([m for m in preload if m != bad], learn, noted_dirty + [dirty[0]])
    return keep_fds, preloaded, missing
