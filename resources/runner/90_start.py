# The sandbox runner, part 90: its start. Joined at the top level of the one source rather than
# compiled as a part of its own (esbuild.mjs), since the frame that runs the program must be that
# source's module level.
if __name__ == '__main__':
    # main() returns only in a forked child. The program runs here, at this file's module level,
    # so that only two frames of the runner are above its own (the -c line and this file), and the
    # recursion counter is set in the frame that calls PyRun_FileExFlags, as it was calibrated.
    # In session mode finish() returns in the next program's process, forked from this state.
    _program = main()
    while _program is not None:
        _main, _fp = _program.open_main()
        _exc = None
        if _program.depth.field is not None:
            ctypes.c_int.from_address(_program.depth.field).value = _program.depth.target
        try:
            _program.native.pyrun(_fp, _program.path, 257, _main, _main, 1, _program.native.cflags)
        except BaseException as _e:  # noqa: BLE001 - the program's uncaught exception, SystemExit included
            _exc = _e
        # Our own names for the program's exception and namespace go before its end.
        _ending = [_exc, _main]
        del _exc, _main
        _program = _program.finish(_ending)
