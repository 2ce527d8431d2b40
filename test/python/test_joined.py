"""The runner ships as one source joined from its parts (esbuild.mjs): a traceback names the part
and its line, and joining adds nothing to sys.modules that the parts themselves would not."""
import ast
import json
import os
import re
import subprocess
import sys
import traceback
import unittest

from golden import ROOT, RUNNER, runner

PARTS = os.path.join(ROOT, 'resources', 'runner')


def part_files():
    return sorted(os.path.join(PARTS, n) for n in os.listdir(PARTS) if n.endswith('.py') and n[:2].isdigit())


def new_modules(source):
    """The modules a fresh interpreter gains by running `source` as a module that is not __main__."""
    probe = (
        'import json, sys\n'
        'before = set(sys.modules)\n'
        'exec(compile(sys.stdin.read(), "joined", "exec"), {"__name__": "codeact_runner"})\n'
        'print(json.dumps(sorted(set(sys.modules) - before)))\n'
    )
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    p = subprocess.run([sys.executable, '-B', '-c', probe], input=source, stdout=subprocess.PIPE,
                       universal_newlines=True, env=env, check=True)
    return json.loads(p.stdout)


class Joined(unittest.TestCase):
    def test_a_traceback_names_the_part_and_its_line(self):
        protocol = os.path.join(PARTS, '00_protocol.py')
        with open(protocol, encoding='utf-8') as f:
            line = [i for i, text in enumerate(f, 1) if "for part in text.split(';'):" in text]
        self.assertEqual(len(line), 1)
        try:
            runner.parse_config(None)
            self.fail('parse_config(None) returned')
        except AttributeError as e:
            last = traceback.extract_tb(e.__traceback__)[-1]
        self.assertEqual((last.filename, last.lineno, last.name), ('resources/runner/00_protocol.py', line[0], 'parse_config'))

    def test_joining_adds_no_module(self):
        parts = ''
        for f in part_files():
            with open(f, encoding='utf-8') as part:
                parts += part.read()
        with open(RUNNER, encoding='utf-8') as f:
            joined = f.read()
        self.assertEqual(new_modules(joined), new_modules(parts))

    def test_every_part_but_the_start_is_in_the_source_once(self):
        with open(RUNNER, encoding='utf-8') as f:
            joined = f.read()
        files = part_files()
        for f in files[:-1]:
            with open(f, encoding='utf-8') as part:
                self.assertEqual(joined.count(shipped(part.read())), 1, f)
        with open(files[-1], encoding='utf-8') as start:
            self.assertTrue(joined.endswith(shipped(start.read())))

    def test_a_part_ships_without_its_comment_lines_and_means_the_same(self):
        for f in part_files():
            with open(f, encoding='utf-8') as part:
                text = part.read()
            out = shipped(text)
            self.assertEqual(out.count('\n'), text.count('\n'), f)
            self.assertNotIn('\n# ', out, f)
            # Same tree, strings and docstrings included: no line of a string was taken for a comment.
            self.assertEqual(ast.dump(ast.parse(out)), ast.dump(ast.parse(text)), f)


def shipped(text):
    """A part as esbuild.mjs ships it: every line that is only a comment left empty."""
    return re.sub(r'^[ \t]*#.*$', '', text, flags=re.M)


if __name__ == '__main__':
    unittest.main()
