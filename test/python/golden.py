"""The runner as the sandbox gets it (dist/runner.py, which the build joins from resources/runner/;
imported: nothing starts), and the
golden frames that test/unit/runnerProtocol.test.ts holds the host's end to."""
import importlib.util
import json
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
RUNNER = os.path.join(ROOT, 'dist', 'runner.py')
if not os.path.exists(RUNNER):
    raise SystemExit('%s is missing: run `npm run build` first, which joins it from resources/runner/' % RUNNER)


def _load_runner():
    # resources/ ships as it is: no __pycache__ may appear next to the runner.
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        spec = importlib.util.spec_from_file_location('codeact_runner', RUNNER)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.dont_write_bytecode = saved


runner = _load_runner()

with open(os.path.join(ROOT, 'test', 'fixtures', 'runner-frames.json'), encoding='utf-8') as _f:
    GOLDEN = json.load(_f)


def bytes_of(spec):
    """A fixture's bytes: hex, or a list of hex strings and {hex, times} repeats."""
    parts = [spec] if isinstance(spec, str) else spec
    return b''.join(bytes.fromhex(p) if isinstance(p, str) else bytes.fromhex(p['hex']) * p['times'] for p in parts)


def read_all(reader, chunks):
    """The frames a reader yields after each chunk, as (kind, id, payload) tuples."""
    out = []
    for chunk in chunks:
        reader.push(chunk)
        out.append([(k.decode(), rid, payload) for k, rid, payload in reader.frames()])
    return out
