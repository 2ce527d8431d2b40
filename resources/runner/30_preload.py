# The sandbox runner, part 30.
# Preloading. A module is kept only if importing it here is invisible to a program that does not
# import it: it printed nothing, started no thread, and left the environment, sys.path, the cwd,
# the umask, signal handlers, std streams, hooks and builtins as they were. Otherwise the runner
# starts over without it (stage 0 again), since an import cannot be undone.
# Preloading on first use (the config's `learn`): the modules of that list this runner has not
# preloaded. A fresh program says which of them it imported (its exit notice); the runner then
# starts over with them preloaded, in the idle time before the next call, so a chat pays for a
# module in every call's fork only once one of its programs has used it. Set by main().
_LEARNABLE = ()
_NON_INTERACTIVE = ('agg', 'cairo', 'pdf', 'pgf', 'ps', 'svg', 'template', 'module://matplotlib_inline.backend_inline')


def _snapshot():
    import builtins

    handlers = []
    for s in range(1, 65):
        try:
            handlers.append(_signal.getsignal(s))
        except (ValueError, OSError):
            handlers.append(None)
    mask = os.umask(0o022)
    os.umask(mask)
    warnings = sys.modules.get('warnings')
    return {
        'environ': dict(os.environ),
        'path': list(sys.path),
        'cwd': os.getcwd(),
        'umask': mask,
        'signals': handlers,
        'streams': (sys.stdin, sys.stdout, sys.stderr),
        'hooks': (sys.excepthook, sys.displayhook, sys.breakpointhook, sys.unraisablehook),
        'builtins': sorted(builtins.__dict__),
        'meta_path': list(sys.meta_path),
        'path_hooks': list(sys.path_hooks),
        'recursion': sys.getrecursionlimit(),
        'switch': sys.getswitchinterval(),
        'warnoptions': list(sys.warnoptions),
        'filters': list(warnings.filters) if warnings else [],
    }


def _threads():
    try:
        return len(os.listdir('/proc/self/task'))
    except OSError:
        return 1


def _fork_safe_threads():
    """True when the process is single-threaded at fork time: either it has no other thread, or
    its threads are a pool that shuts down before a fork (OpenBLAS does, and starts it again
    when it is next needed). A probe child is forked and our thread count checked after."""
    if _threads() == 1:
        return True
    try:
        pid = os.fork()
    except OSError:  # the pids limit, say: cannot tell, so not safe
        return False
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return _threads() == 1


def _own_class(obj, extra):
    """True when obj's class comes from a module that a preload added: a program that does not
    import that module cannot meet it."""
    mod = getattr(type(obj) if not isinstance(obj, type) else obj, '__module__', '') or ''
    return mod.split('.')[0] in extra


def _passive_finder(finder):
    """A meta path finder that answers only for its own names (six's does, for six.moves)."""
    try:
        return all(finder.find_spec(n, None) is None for n in ('json', 'csv', 'codeact_probe_absent'))
    except Exception:  # noqa: BLE001
        return False


def _difference(before, after, extra):
    for key in ('environ', 'path', 'cwd', 'umask', 'signals', 'builtins', 'recursion', 'switch', 'warnoptions', 'path_hooks'):
        a, b = before[key], after[key]
        if key == 'path_hooks':
            if len(a) != len(b) or any(x is not y for x, y in zip(a, b)):
                return key
        elif a != b:
            return key
    for key in ('streams', 'hooks'):
        a, b = before[key], after[key]
        if any(x is not y for x, y in zip(a, b)):
            return key
    old_meta, new_meta = before['meta_path'], after['meta_path']
    if any(all(m is not n for n in new_meta) for m in old_meta):
        return 'meta_path'
    for m in new_meta:
        if all(m is not o for o in old_meta) and not (_own_class(m, extra) and _passive_finder(m)):
            return 'meta_path'
    # A module may add warning filters that only silence warnings (numpy does, for messages about
    # its own ABI), or that concern its own warning classes; anything else is a change.
    old, new = before['filters'], after['filters']
    if any(f not in new for f in old):
        return 'warnings.filters'
    for f in new:
        if f not in old and f[0] != 'ignore' and not _own_class(f[2], extra):
            return 'warnings.filters'
    if not _fork_safe_threads():
        return 'threads'
    return None


def _extra_modules():
    """Top-level names of the modules loaded here that a fresh `python3 file` would not have."""
    return {m.split('.')[0] for m in set(sys.modules) - _BASE_MODULES}


_EOPNOTSUPP = 95  # Linux's number; the errno module is not imported here (one module fewer to shadow)


def _unnamed_file(directory):
    """A file in `directory` that no name reaches. gVisor refuses O_TMPFILE on a mounted directory
    (EOPNOTSUPP): there the file gets a random name that is removed at once."""
    try:
        return os.open(directory, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except OSError as e:
        if e.errno != _EOPNOTSUPP:
            raise
    path = os.path.join(directory, '.capture-%s' % os.urandom(8).hex())
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    os.unlink(path)
    return fd


def _preload(names, capture_dir='/sandbox/tmp'):
    """Imports `names` in order; returns (preloaded, missing, dirty), dirty being the first module
    that was not invisible (the runner then starts over without it). What the imports print
    goes to an unnamed file in `capture_dir`."""
    preloaded, missing, dirty = [], [], []
    if not names:
        return preloaded, missing, dirty
    try:
        capture = _unnamed_file(capture_dir)
    except OSError as e:
        _log('cannot capture import output (%s); not preloading' % e)
        return preloaded, list(names), dirty
    saved = os.dup(1), os.dup(2)
    try:
        for name in names:
            if name.split('.')[0] == 'matplotlib' and os.environ.get('MPLBACKEND', '').lower() not in _NON_INTERACTIVE:
                missing.append(name)  # would pick an interactive backend: leave it to the program
                continue
            before = _snapshot()
            os.dup2(capture, 1)
            os.dup2(capture, 2)
            try:
                __import__(name)
                failure = None
            except ModuleNotFoundError as e:
                failure = 'missing' if e.name and (name == e.name or name.startswith(e.name + '.')) else 'error'
            except BaseException as e:  # noqa: BLE001 - a broken install must not break the runner
                failure = 'error: %s' % type(e).__name__
            finally:
                # A print() at import time may still sit in sys.stdout's buffer: into the capture
                # with it, or every child would print it when its own output is flushed.
                _flush_io()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
            if failure == 'missing':
                missing.append(name)
                continue
            reason = failure or _difference(before, _snapshot(), _extra_modules())
            if not reason and os.fstat(capture).st_size:
                reason = 'printed output'
            if reason:
                dirty.append('%s(%s)' % (name, reason))
                return preloaded, missing, dirty
            preloaded.append(name)
    finally:
        os.close(saved[0])
        os.close(saved[1])
        os.close(capture)
    return preloaded, missing, dirty


def _open_fds():
    fds = set()
    for fd in os.listdir('/proc/self/fd'):
        try:
            os.fstat(int(fd))
            fds.add(int(fd))
        except OSError:
            pass
    return fds
