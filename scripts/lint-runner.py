"""Lints the sandbox runner's parts (resources/runner/) with Debian's flake8, as the one namespace
they run in: pyflakes reads the parts joined (a name one part defines is used by another), with
each finding put back on its part and line; pycodestyle reads each part as the file it is."""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
PARTS = os.path.join('resources', 'runner')
# What only the joined parts can decide: unused imports, redefinitions, undefined names.
ACROSS = 'F401,F811,F821'


def flake8(*args):
    p = subprocess.run([sys.executable, '-m', 'flake8', *args], cwd=ROOT, stdout=subprocess.PIPE, universal_newlines=True)
    return [line for line in p.stdout.splitlines() if line]


def main():
    names = sorted(n for n in os.listdir(os.path.join(ROOT, PARTS)) if re.match(r'^\d\d_[a-z0-9_]+\.py$', n))
    files = [os.path.join(PARTS, n) for n in names]
    found = flake8('--extend-ignore=' + ACROSS, *files)
    starts = []
    with tempfile.NamedTemporaryFile('w', suffix='.py', delete=False) as joined:
        line = 1
        for f in files:
            with open(os.path.join(ROOT, f), encoding='utf-8') as part:
                text = part.read()
            starts.append((line, f))
            joined.write(text)
            line += text.count('\n')
    try:
        for row in flake8('--select=' + ACROSS, joined.name):
            at, rest = row[len(joined.name) + 1:].split(':', 1)
            start, f = [s for s in starts if s[0] <= int(at)][-1]
            found.append('%s:%d:%s' % (f, int(at) - start + 1, rest))
    finally:
        os.unlink(joined.name)
    for row in found:
        print(row)
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
