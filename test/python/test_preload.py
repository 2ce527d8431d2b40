"""Preloading leaves out a module whose import prints, even when the print is still buffered.
Each case runs in a fresh interpreter (an import cannot be undone), with stdout a pipe and
Python's own buffering, as a runner started without PYTHONUNBUFFERED has it."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from golden import RUNNER

CHILD = textwrap.dedent('''
    import importlib.util, json, sys
    sys.dont_write_bytecode = True
    spec = importlib.util.spec_from_file_location('codeact_runner', sys.argv[1])
    r = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(r)
    sys.path.insert(0, sys.argv[2])
    result = r._preload(sys.argv[4].split(','), sys.argv[3])
    sys.stderr.write(json.dumps(result))
''')


def preload(modules):
    """(preloaded, missing, dirty) and what reached the child's stdout."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, 'codeact_prints.py'), 'w') as f:
            f.write('print("printed at import")\n')
        with open(os.path.join(d, 'codeact_quiet.py'), 'w') as f:
            f.write('VALUE = 1\n')
        env = {k: v for k, v in os.environ.items() if k not in ('PYTHONUNBUFFERED', 'PYTHONPATH')}
        p = subprocess.run(
            [sys.executable, '-B', '-c', CHILD, RUNNER, d, d, ','.join(modules)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60, check=True,
        )
    return json.loads(p.stderr), p.stdout


class Preload(unittest.TestCase):
    def test_a_quiet_module_is_kept(self):
        self.assertEqual(preload(['codeact_quiet', 'json']), ([['codeact_quiet', 'json'], [], []], b''))

    def test_a_buffered_print_at_import_is_caught(self):
        result, stdout = preload(['codeact_quiet', 'codeact_prints', 'json'])
        self.assertEqual(result, [['codeact_quiet'], [], ['codeact_prints(printed output)']])
        self.assertEqual(stdout, b'')

    def test_a_missing_module_is_skipped(self):
        self.assertEqual(preload(['codeact_absent', 'codeact_quiet']), ([['codeact_quiet'], ['codeact_absent'], []], b''))


if __name__ == '__main__':
    unittest.main()
