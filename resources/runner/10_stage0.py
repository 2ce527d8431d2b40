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
    r, w = os.pipe()
    import fcntl  # the process is replaced below: this import leaves no trace

    fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ: the whole payload fits before anyone reads
    if len(payload) > (1 << 20) - 4096:
        raise SystemExit('runner source too large for the hand-over pipe')
    view = memoryview(payload)
    while view:
        view = view[os.write(w, view):]
    os.close(w)
    if r != 3:
        os.dup2(r, 3)
        os.close(r)
    else:
        os.set_inheritable(3, True)
    # A restart passes the environment the runner started with: a module that was not kept may
    # have changed os.environ (sklearn sets KMP_*), and exec would hand that to every program.
    if env is None:
        os.execv(sys.executable or '/usr/bin/python3', ['python3', '-c', _BOOT])
    os.execve(sys.executable or '/usr/bin/python3', ['python3', '-c', _BOOT], env)


def _start_over(preload, learn, dirty):
    """Stage 0 again (stage 1 starting over), with the environment the runner started with and
    this config: the modules to preload, those it may preload once a program imported them,
    and those found not transparent."""
    _stage0_exec('preload=%s;learn=%s;dirty=%s' % (','.join(preload), ','.join(learn), ','.join(dirty)), _START_ENV)
