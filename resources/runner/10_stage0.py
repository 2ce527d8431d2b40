# The sandbox runner, part 10: stage 0, the container's command, which hands the source to stage 1.
def _stage0_exec(config, env=None):
    # The source is our own -c argument in stage 0 (/proc/self/cmdline has it on every Python
    # version); stage 1 keeps a copy to start over with.
    source = globals().get('_CODEACT_SOURCE')
    if source is None:
        with open('/proc/self/cmdline', 'rb') as f:
            source = f.read().split(b'\0')[2]
    payload = b''.join([
        b'_CODEACT_STAGE = 1\n_CODEACT_CONFIG = ', repr(config).encode(),
        b'\n_CODEACT_SOURCE = ', repr(source).encode(), b'\n', source,
    ])
    if len(payload) > (1 << 20) - 4096:
        raise SystemExit('runner source too large for the hand-over pipe')
    # Should anything below fail (exec refused, a pipe the kernel will not grow), the runner serves
    # on: fd 3 (in stage 1 the channel may be there) is put back, and nothing of this stays.
    had_fcntl = 'fcntl' in sys.modules
    r = w = saved = None
    moved = False
    try:
        r, w = os.pipe()
        import fcntl  # the process is replaced below: this import leaves no trace (or is undone)

        fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ: the whole payload fits before anyone reads
        view = memoryview(payload)
        while view:
            view = view[os.write(w, view):]
        os.close(w)
        w = None
        if r != 3:
            try:
                saved = (os.dup(3), os.get_inheritable(3))  # the copy is close-on-exec
            except OSError as e:
                if e.errno != 9:  # EBADF: fd 3 is not open; anything else, and 3 is not ours to take
                    raise
            os.dup2(r, 3)
            moved = True
            os.close(r)
        else:
            os.set_inheritable(3, True)
            moved = True
        r = None
        # A restart passes the environment the runner started with: a module that was not kept may
        # have changed os.environ (sklearn sets KMP_*), and exec would hand that to every program.
        if env is None:
            os.execv(sys.executable or '/usr/bin/python3', ['python3', '-c', _BOOT])
        os.execve(sys.executable or '/usr/bin/python3', ['python3', '-c', _BOOT], env)
    except BaseException:
        if not had_fcntl:
            sys.modules.pop('fcntl', None)
        for fd in (r, w):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if moved and saved is None:
            os.close(3)
        elif moved:
            os.dup2(saved[0], 3, inheritable=saved[1])
        if saved is not None:
            os.close(saved[0])
        raise


def _start_over(preload, learn, dirty):
    """Stage 0 again (stage 1 starting over), with the environment the runner started with and
    this config: the modules to preload, those it may preload once a program imported them,
    and those found not transparent."""
    _stage0_exec('preload=%s;learn=%s;dirty=%s' % (','.join(preload), ','.join(learn), ','.join(dirty)), _START_ENV)
