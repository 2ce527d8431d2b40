"""The runner ships as one source joined from its parts (esbuild.mjs): a traceback names the part
and its line, and joining adds nothing to sys.modules that the parts themselves would not."""
import ast
import json
import os
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

    def test_the_source_holds_every_part_once_in_order(self):
        self.assertEqual([name for name, _text in shipped_parts()], [os.path.relpath(f, ROOT) for f in part_files()])

    def test_a_part_ships_without_comment_lines_or_docstrings_and_means_the_same(self):
        for name, out in shipped_parts():
            with open(os.path.join(ROOT, name), encoding='utf-8') as part:
                text = part.read()
            self.assertEqual(out.count('\n'), text.count('\n'), name)
            self.assertNotIn('\n# ', out, name)
            # The same tree but the docstrings: no line of another string was taken for a comment.
            self.assertEqual(ast.dump(ast.parse(out)), ast.dump(without_docstrings(ast.parse(text))), name)


def shipped_parts():
    """(part's path, its text) as the joined source holds them: the loop's (path, r'''text''') pairs,
    then the start, which is the source's own top level after that loop."""
    with open(RUNNER, encoding='utf-8') as f:
        joined = f.read()
    tree = ast.parse(joined)
    loop = next(node for node in tree.body if isinstance(node, ast.For))
    parts = [(name.value, text.value) for name, text in (pair.elts for pair in loop.iter.elts)]
    marker = 'del _codeact_part, _codeact_text\n'
    start = joined[joined.index(marker) + len(marker):]
    return parts + [(os.path.relpath(part_files()[-1], ROOT), start)]


def without_docstrings(tree):
    """`tree` without its docstrings; a body that was only one keeps a `pass`."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body = node.body[1:] or ([] if isinstance(node, ast.Module) else [ast.Pass()])
    return tree


if __name__ == '__main__':
    unittest.main()
