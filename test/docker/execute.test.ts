import * as assert from 'node:assert/strict';
import * as os from 'node:os';
import { NOTHING_PRINTED } from '../../src/core/format';
import { sessionDigest } from '../../src/core/session';
import { LABEL } from '../../src/docker/container/labels';
import { byRuntime, inspect, run, uniqueSessionKey, useDocker } from './helpers';

const RUN_DIR = /^\/sandbox\/runs\/[0-9]{4}-[0-9a-f]{6}$/;

describe('execute_code results (integration)', function () {
  const sandboxes = useDocker();
  const provider = sandboxes.makeProvider();

  it('hello world comes back as exactly its stdout section', async function () {
    const r = await run(provider, uniqueSessionKey('hello'), "print('hello world')");
    assert.equal(r.text, 'stdout:\nhello world');
    assert.equal(r.exitCode, 0);
    assert.equal(r.timedOut, false);
    assert.equal(r.cancelled, false);
    assert.equal(r.outputLimited, false);
  });

  it('reports stdout, stderr and a non-zero exit code in that order', async function () {
    const code = ['import sys', "print('to stdout')", "print('to stderr', file=sys.stderr)", 'sys.exit(3)'].join('\n');
    const r = await run(provider, uniqueSessionKey('exit3'), code);
    assert.equal(r.text, 'stdout:\nto stdout\n\nstderr:\nto stderr\n\nexit code: 3');
    assert.equal(r.exitCode, 3);
  });

  it('says the program printed nothing when it printed nothing', async function () {
    const r = await run(provider, uniqueSessionKey('silent'), 'x = 1');
    assert.equal(r.text, NOTHING_PRINTED);
    assert.equal(
      r.text,
      'The program ran and printed nothing. Only what the program prints comes back: end it with print(...) of everything you need to see.',
    );
    assert.equal(r.exitCode, 0);
  });

  it('never goes through a shell: the source arrives byte for byte and argv is fixed', async function () {
    // Everything a shell would act on, in comments, strings and a triple-quoted block.
    const code = [
      '# $(touch /sandbox/pwned) `touch /sandbox/pwned2` ; rm -rf / && echo hi || true > /dev/null | cat &',
      'import sys, os',
      's1 = "double \\"quotes\\" and \'single\' $(whoami) `uname -a`; rm -rf / && echo pwned"',
      "s2 = 'escaped\\nnewline, $HOME, ${PATH}, \\\\ backslash, * ? [a-z] ~ !! #'",
      's3 = """a real',
      'newline ; rm -rf / && reboot',
      '\'quoted\' "lines" `id` $(id)"""',
      "s4 = 'non-ASCII: héllo wörld – 日本語 ✓ \\x00 nul'",
      'print(repr(sys.argv))',
      "sys.stdout.write(open(__file__, encoding='utf-8').read())",
      "print(os.path.exists('/sandbox/pwned'), os.path.exists('/sandbox/pwned2'))",
      '',
    ].join('\n');
    const r = await run(provider, uniqueSessionKey('noshell'), code);
    const m = /^stdout:\n\['(\/sandbox\/runs\/[0-9]{4}-[0-9a-f]{6}\/program\.py)'\]\n/.exec(r.text);
    assert.ok(m, `argv is not ['/sandbox/runs/<id>/program.py']: ${r.text.slice(0, 200)}`);
    const argvLine = `['${m[1]}']\n`;
    assert.equal(r.text, `stdout:\n${argvLine}${code}False False`);
    // Byte for byte, as captured (before any formatting).
    const captured = Buffer.concat([r.stdout.head, r.stdout.tail]);
    assert.equal(r.stdout.totalBytes, captured.length);
    assert.deepEqual(captured, Buffer.from(`${argvLine}${code}False False\n`, 'utf8'));
    assert.equal(r.exitCode, 0);
  });

  it('gives every call a fresh, empty working directory', async function () {
    const key = uniqueSessionKey('freshdir');
    const first = await run(provider, key, "import os\nopen('note.txt', 'w').write('hi')\nprint(os.getcwd())");
    const cwd1 = first.text.replace(/^stdout:\n/, '');
    assert.match(cwd1, RUN_DIR);
    assert.equal(first.text, `stdout:\n${cwd1}`);

    const second = await run(
      provider,
      key,
      `import os\nprint(os.getcwd())\nprint(sorted(os.listdir('.')))\nprint(open('${cwd1}/note.txt').read())`,
    );
    const cwd2 = second.text.split('\n')[1]!;
    assert.match(cwd2, RUN_DIR);
    assert.notEqual(cwd2, cwd1);
    // Only the program itself; the earlier call's file stays where that call left it.
    assert.equal(second.text, `stdout:\n${cwd2}\n['program.py']\nhi`);
    assert.equal(second.sandboxId, first.sandboxId);
  });

  it('keeps one container per session and gives another session its own', async function () {
    const a = uniqueSessionKey('session-a');
    const b = uniqueSessionKey('session-b');
    const a1 = await run(provider, a, "print('a1')");
    const a2 = await run(provider, a, "print('a2')");
    const b1 = await run(provider, b, "print('b1')");
    assert.equal(a1.text, 'stdout:\na1');
    assert.equal(a2.text, 'stdout:\na2');
    assert.equal(b1.text, 'stdout:\nb1');
    assert.equal(a2.sandboxId, a1.sandboxId);
    assert.notEqual(b1.sandboxId, a1.sandboxId);
    assert.equal((await inspect(a1.sandboxId)).Config.Labels[LABEL.session], sessionDigest(a));
    assert.equal((await inspect(b1.sandboxId)).Config.Labels[LABEL.session], sessionDigest(b));
  });

  it('symlinks in the work area only ever reach the sandbox’s own files', async function () {
    const key = uniqueSessionKey('symlink');
    const first = await run(provider, key, "import os\nopen('secret.txt', 'w').write('from call 1')\nprint(os.getcwd())");
    const cwd1 = first.text.replace(/^stdout:\n/, '');
    assert.match(cwd1, RUN_DIR);
    const hostDir = process.cwd();
    const code = [
      'import os',
      "os.symlink('/etc/passwd', 'passwd')",
      "os.symlink('/etc/hostname', 'hostname')",
      `os.symlink(${JSON.stringify(cwd1)}, 'earlier')`,
      `os.symlink(${JSON.stringify(hostDir)}, 'hostdir')`,
      "os.symlink('/', 'root')",
      "print([l for l in open('passwd').read().splitlines() if l.startswith('nobody:')])",
      "print(open('hostname').read().strip())",
      "print(open('earlier/secret.txt').read())",
      "print(os.path.exists('hostdir'), os.path.exists('hostdir/package.json'))",
      "listing = os.listdir('root/sandbox/runs')",
      "print(len(listing) if listing == os.listdir('/sandbox/runs') else 'the root' if listing == os.listdir('/') else listing)",
    ].join('\n');
    const r = await run(provider, key, code);
    assert.equal(r.sandboxId, first.sandboxId);
    // The image's passwd, the container's own hostname (its id), this session's earlier file;
    // the host's working directory does not exist in there.
    assert.equal(
      r.text,
      [
        'stdout:',
        "['nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin']",
        r.sandboxId.slice(0, 12),
        'from call 1',
        'False False',
        // gVisor resolves a path through a link to / on the mounted work area to / itself: still the sandbox's own files.
        byRuntime({ runc: '2', gvisor: 'the root' }),
      ].join('\n'),
    );
    assert.ok(!r.text.includes(os.hostname()), `the host's name ${os.hostname()} leaked into the sandbox`);
  });
});
