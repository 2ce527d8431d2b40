import * as assert from 'node:assert/strict';
import { executeCode, type ExecuteReport } from '../../src/core/executeCode';
import { NOTHING_PRINTED } from '../../src/core/format';
import { bytesReader, type StagedFile } from '../../src/core/sandbox';
import { encodeFrame } from '../../src/core/runnerProtocol';
import type { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { killedSentence } from '../../src/docker/run/stopped';
import { ALONE_WITH_PID1, SENTENCES, TEST_RUNTIME, AFTER_SANDBOX_ENDED, byEngine, byRuntime, WAITING_TEST_MS, dockerCli, log, programProcesses, run, runLimits, testSpec, uniqueSessionKey, useDocker, waitFor, warmSandbox } from './helpers';

/** The parts of a result that must not differ between the runner and `docker exec`. */
function normalized(r: ExecuteReport): string {
  const text = podmanExecDetails(gvisorDetails(r.text).replace(/\/sandbox\/runs\/[0-9]{4}-[0-9a-f]{6}/g, '<run>').replace(/'HOSTNAME', '[0-9a-f]{12}'/, "'HOSTNAME', '<id>'"));
  return `${text}\n[exit ${r.exitCode}]`;
}

/**
 * What Podman's `docker exec` leaves out that its container's PID 1 has: the HOSTNAME variable
 * and the sandbox user's group in the supplementary list (README, "What differs under Podman").
 */
const podmanExecDetails = byEngine({
  docker: (text: string) => text,
  podman: (text: string) => text.replace("('HOSTNAME', '<id>'), ", '').replace('65534 65534 [65534] 0o22', '65534 65534 [] 0o22'),
});

/**
 * Two /proc details gVisor's kernel shows otherwise, harmless to a program: the runner's rewrite of
 * the child's argument area does not reach gVisor's /proc/self/cmdline, and docker exec's stdin
 * reads as the host descriptor gVisor was given (host:[N]) where the runner's child has /dev/null.
 */
const gvisorDetails = byRuntime({
  runc: (text: string) => text,
  gvisor: (text: string) =>
    text
      .replace("b'python3\\x00-c\\x00import os;exec(os.read(3,1<<20)) \\x00'", "b'python3\\x00<run>/program.py\\x00'")
      .replace(/ host:\[[0-9]+\] /, ' /dev/null '),
});

/**
 * A program that imports modules of its own, one on each side of a module of the start it takes
 * out of sys.modules and imports again: at its end, only its own are torn down (their globals'
 * finalizers print), in the order `python3 file` tears them down.
 */
const OWN_MODULES = [
  'import sys',
  'for name in ("mod_a", "mod_b"):',
  '    with open(name + ".py", "w") as f:',
  '        f.write("class R:\\n    def __del__(self):\\n        print(%r, \'finalized\')\\nr = R()\\n" % name)',
  'import mod_a',
  'old = sys.modules.pop("os")',
  'import os',
  'import mod_b',
  'print(os is old)',
].join('\n');
const OWN_MODULES_TEXT = 'stdout:\nFalse\nmod_a finalized\nmod_b finalized';

/**
 * Programs whose result must be the same text through the warm runner (forked from a warm
 * interpreter) and through a fresh `docker exec python3 program.py`.
 */
const PARITY: [string, string][] = [
  ['exit code with both streams', 'import sys\nprint("out")\nprint("err", file=sys.stderr)\nsys.exit(3)'],
  ['an uncaught exception (traceback through functions)', 'def f():\n    raise ValueError("boom")\n\n\ndef g():\n    f()\n\n\ng()\n'],
  ['chained exceptions', 'try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    raise KeyError("k") from e\n'],
  ['sys.exit with a string', 'import sys\nprint("about to fail")\nsys.exit("fatal: bad input")'],
  ['sys.exit with a list', 'import sys\nsys.exit(["a", 1])'],
  ['SystemExit(263) wraps to 7', 'raise SystemExit(256 + 7)'],
  ['sys.exit(None) and sys.exit(True)', 'import sys, atexit\natexit.register(print, "bye")\nsys.exit(None if len(sys.argv) > 5 else True)'],
  ['stderr only', 'import sys\nsys.stderr.write("warning only\\n")'],
  ['nothing printed', 'x = 1'],
  ['reading stdin gets EOF', 'import sys\nprint(repr(sys.stdin.read()))\nprint(input("prompt? "))'],
  [
    '__main__, argv, __file__, sys.path[0], cwd, cmdline',
    [
      '"""The docstring."""',
      'import os, sys',
      'print(__name__, __file__, __package__, __spec__, __doc__, __cached__)',
      'print(type(__loader__).__name__, __loader__.name, __loader__.path)',
      'print(sorted(globals()))',
      'print(sys.argv, sys.orig_argv, sys.path[0], os.getcwd())',
      'print(sys.path[1:])',
      'print(sys.modules["__main__"].__dict__ is globals(), sys.executable, sys.flags)',
      'print(open("/proc/self/cmdline", "rb").read())',
      'if __name__ == "__main__":',
      '    print("main guard ran")',
    ].join('\n'),
  ],
  [
    'importing a module written next to the program',
    [
      'import pathlib',
      'pathlib.Path("helper.py").write_text("VALUE = 41\\ndef inc(x):\\n    return x + 1\\n")',
      'import helper',
      'from helper import inc',
      'print(helper.inc(helper.VALUE), inc(1), helper.__file__)',
    ].join('\n'),
  ],
  ['os._exit keeps what was printed', 'import os, sys\nprint("partial", end="")\nsys.stderr.write("err-partial")\nos._exit(4)'],
  ['killed by SIGTERM', 'import os, signal\nprint("before", flush=True)\nos.kill(os.getpid(), signal.SIGTERM)\nprint("after")'],
  ['KeyboardInterrupt from SIGINT', 'import os, signal\nprint("before")\nos.kill(os.getpid(), signal.SIGINT)\nprint("after")'],
  [
    'signal dispositions, mask and handlers',
    [
      'import os, signal',
      'print([str(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD, signal.SIGXFSZ, signal.SIGHUP, signal.SIGUSR1)])',
      'print(sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])))',
      'signal.signal(signal.SIGUSR1, lambda s, f: print("handled", s))',
      'os.kill(os.getpid(), signal.SIGUSR1)',
      'print("done")',
    ].join('\n'),
  ],
  [
    'threads still running at exit',
    [
      'import threading, time',
      'def late():',
      '    time.sleep(0.3)',
      '    print("non-daemon thread finished")',
      'threading.Thread(target=late).start()',
      'threading.Thread(target=lambda: time.sleep(60), daemon=True).start()',
      'print("main finished")',
    ].join('\n'),
  ],
  [
    'atexit, then finalizers of module globals',
    [
      'import atexit, sys',
      'class Res:',
      '    def __del__(self):',
      '        print("finalized", sys.argv)',
      'r = Res()',
      'atexit.register(lambda: print("atexit", "__file__" in globals()))',
      'print("main")',
    ].join('\n'),
  ],
  [
    'environment, identity, descriptors, processes',
    [
      'import os, sys',
      'print(sorted(os.environ.items()))',
      'print(os.getuid(), os.getgid(), os.getgroups(), oct(os.umask(0o22)))',
      'print(sorted(os.listdir("/proc/self/fd")), os.readlink("/proc/self/fd/0"), os.get_inheritable(1))',
      'print(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()) == [1, os.getpid()])',
      'print(sys.stdin.isatty(), sys.stdout.line_buffering, sys.stdout.write_through, sys.stdout.encoding, sys.stdout.errors, sys.stderr.errors)',
      'print(sorted(os.sched_getaffinity(0)) == sorted(os.sched_getaffinity(0)), os.nice(0))',
    ].join('\n'),
  ],
  ["its own modules' globals finalized, a module of the start imported again", OWN_MODULES],
  ['a syntax error', 'print("unclosed"\n'],
  ['an indentation error', 'if True:\nprint(1)\n'],
  [
    'recursion depth up to the limit',
    'import sys\ndef f(n):\n    try:\n        return f(n + 1)\n    except RecursionError:\n        return n\nprint(f(0))\nsys.setrecursionlimit(80)\nprint(f(0))',
  ],
  ['a custom excepthook that exits', 'import sys\ndef hook(t, v, tb):\n    print("hooked", t.__name__)\n    sys.exit(7)\nsys.excepthook = hook\n1 / 0'],
  ['a broken excepthook', 'import sys\ndef hook(t, v, tb):\n    raise RuntimeError("hook broke")\nsys.excepthook = hook\nraise ValueError("original")'],
  ['closing stdout: exit 120 at the final flush', 'import os, sys\nos.close(1)\nprint("lost")'],
  ['non-ASCII output and big ints', 'print("héllo ✓ 日本語")\nprint(2 ** 200)'],
];

/**
 * Every sandbox here whose calls must be forked from the runner is waited for first (warmSandbox):
 * a new sandbox's first calls run by docker exec until its runner is ready, which takes as long as
 * the machine needs.
 */
describe('the warm runner (integration)', function () {
  this.timeout(WAITING_TEST_MS);
  const sandboxes = useDocker();
  const warm = sandboxes.makeProvider();
  const plain = sandboxes.makeProvider({ spec: () => testSpec({ warmRunner: false }) });
  const warmKey = uniqueSessionKey('parity-warm');
  const plainKey = uniqueSessionKey('parity-plain');

  describe('gives the result text of `python3 program.py` through docker exec', function () {
    before(async function () {
      // Both sandboxes exist before the table runs, so it measures runs, not creation; and the
      // warm one's runner is ready, so the table compares the runner with docker exec.
      await Promise.all([warmSandbox(warm, warmKey), run(plain, plainKey, 'pass')]);
    });
    for (const [name, code] of PARITY) {
      it(name, async function () {
        const [w, p] = await Promise.all([run(warm, warmKey, code), run(plain, plainKey, code)]);
        assert.equal(normalized(w), normalized(p));
      });
    }

    it('tears down exactly the modules the program imported', async function () {
      assert.equal((await run(warm, warmKey, OWN_MODULES)).text, OWN_MODULES_TEXT);
    });

    it('runs them as forks of the runner, not through docker exec', async function () {
      const r = await run(warm, warmKey, 'import os\nprint(os.getppid())');
      assert.equal(r.text, 'stdout:\n1');
      const p = await run(plain, plainKey, 'import os\nprint(os.getppid())');
      assert.equal(p.text, 'stdout:\n0');
    });

    it('gives each run fresh random state', async function () {
      const code = 'import random, os\nprint(random.random(), os.urandom(8).hex())';
      const a = await run(warm, warmKey, code);
      const b = await run(warm, warmKey, code);
      assert.notEqual(a.text, b.text);
    });

    it('runs a program that a file next to it would shadow in a new interpreter, as python3 file would', async function () {
      // The runner has `ctypes` loaded; a fresh interpreter would import the shared ctypes.py: the
      // runner's child execs one (still its child, so the call's processes end with it).
      const file = Buffer.from('WHO = "the shared file"\n');
      const staged: StagedFile = { name: 'ctypes.py', size: file.length, open: async () => bytesReader(file) };
      const code = 'import ctypes\nprint(ctypes.WHO)';
      const [w, p] = await Promise.all(
        [
          [warm, warmKey],
          [plain, plainKey],
        ].map(([provider, key]) =>
          executeCode(provider as DockerSandboxProvider, log, { code, sessionKey: key as string, files: [staged] }, runLimits()),
        ),
      );
      assert.equal(w.text, 'stdout:\nthe shared file');
      assert.equal(normalized(w), normalized(p));
    });
  });

  describe('hostile programs end cleanly and the next call works', function () {
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey('hostile');
    let sandboxId = '';
    const HELLO = "print('hello world')";
    const next = async () => {
      const r = await run(provider, key, ALONE_WITH_PID1);
      assert.equal(r.text, 'stdout:\nTrue', 'only PID 1 (the runner) and the program are left');
      assert.equal(r.sandboxId, sandboxId, 'the sandbox was not replaced');
      // Still the warm path: a fork answers in milliseconds, docker exec in a tenth of a second.
      const h = await run(provider, key, HELLO);
      assert.equal(h.text, 'stdout:\nhello world');
    };

    before(async function () {
      sandboxId = (await warmSandbox(provider, key)).id;
    });

    it('closing and overwriting every descriptor', async function () {
      const code = [
        'import os',
        'null = os.open("/dev/null", os.O_RDWR)',
        'for fd in range(0, 1024):',
        '    if fd != null:',
        '        try:',
        '            os.dup2(null, fd)',
        '        except OSError:',
        '            pass',
        'for fd in range(0, 1024):',
        '    try:',
        '        os.close(fd)',
        '    except OSError:',
        '        pass',
      ].join('\n');
      const [r, p] = await Promise.all([run(provider, key, code), run(plain, plainKey, code)]);
      assert.equal(normalized(r), normalized(p));
      await next();
    });

    it('killing its parent, PID 1 and its process group', async function () {
      const code = [
        'import os, signal',
        'for pid in (os.getppid(), 1):',
        '    for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGSTOP, signal.SIGHUP):',
        '        try:',
        '            os.kill(pid, sig)',
        '        except OSError as e:',
        '            print(pid, sig, e.errno)',
        'print("still here")',
        'os.killpg(0, signal.SIGKILL)',
      ].join('\n');
      const r = await run(provider, key, code);
      // PID 1 is the runner; the kernel drops signals to a namespace's init that it does not handle.
      // gVisor's does not: the program kills the runner, the sandbox ends and the next call gets a new one.
      assert.equal(r.text, byRuntime({ runc: 'stdout:\nstill here\n\nexit code: 137', gvisor: killedSentence(TEST_RUNTIME!) }));
      if (TEST_RUNTIME === 'runsc') {
        const fresh = await run(provider, key, HELLO);
        assert.equal(fresh.text, AFTER_SANDBOX_ENDED('stdout:\nhello world'));
        assert.notEqual(fresh.sandboxId, sandboxId);
        sandboxId = (await warmSandbox(provider, key)).id;
        assert.equal(sandboxId, fresh.sandboxId);
      }
      await next();
    });

    it('flooding its output past the limit', async function () {
      const r = await run(provider, key, 'import sys\nwhile True:\n    sys.stdout.write("x" * 65536)', { limits: { maxOutputBytes: 4 * 1024 * 1024 } });
      assert.equal(r.outputLimited, true);
      assert.match(r.text, /The program printed more than 4\.0 MB and was stopped\./);
      await next();
    });

    it('forking children that keep its output open, and children that leave it', async function () {
      const code = [
        'import os, time',
        'for i in range(5):',
        '    if os.fork() == 0:',
        '        if i % 2:',
        '            os.setsid()',
        '        time.sleep(60)',
        '        os._exit(0)',
        'print("parent done")',
      ].join('\n');
      const started = Date.now();
      const r = await run(provider, key, code);
      assert.equal(r.text, 'stdout:\nparent done');
      assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
      await next();
    });

    it('writing protocol frames and reaching for the channel', async function () {
      const forged = Buffer.concat([
        encodeFrame('X', 1, Buffer.from('{"t":"exit","exitCode":0,"signal":null,"killed":false,"limited":false,"orphans":false}')),
        encodeFrame('H', 0, Buffer.from('{}')),
      ]);
      const code = [
        'import os, sys',
        `frames = bytes.fromhex("${forged.toString('hex')}")`,
        'sys.stdout.buffer.write(frames)',
        'sys.stderr.buffer.write(frames)',
        'sys.stdout.flush()',
        'print()',
        // Nothing but its own stdio (3 is listdir's own descriptor).
        'print(sorted(os.listdir("/proc/self/fd")))',
        'print([os.readlink(f"/proc/self/fd/{fd}")[:5] for fd in (0, 1, 2)])',
        'for path in ("/proc/1/fd/0", "/proc/1/fd/1", "/proc/1/fd", "/proc/1/mem", "/proc/1/environ"):',
        '    try:',
        '        os.open(path, os.O_WRONLY if path.endswith(("0", "1")) else os.O_RDONLY)',
        '        print(path, "OPENED")',
        '    except OSError as e:',
        '        print(path, e.strerror)',
        'sys.exit(5)',
      ].join('\n');
      const r = await run(provider, key, code);
      const frameText = forged.toString('utf8');
      assert.equal(
        r.text,
        [
          'stdout:',
          frameText,
          "['0', '1', '2', '3']",
          "['/dev/', 'pipe:', 'pipe:']",
          // The runner is not dumpable, so Linux gives its /proc entries to root. gVisor's kernel
          // does not (README: what differs under gVisor); /proc/1/mem stays closed.
          ...byRuntime({
            runc: ['/proc/1/fd/0 Permission denied', '/proc/1/fd/1 Permission denied', '/proc/1/fd Permission denied'],
            gvisor: ['/proc/1/fd/0 OPENED', '/proc/1/fd/1 OPENED', '/proc/1/fd OPENED'],
          }),
          '/proc/1/mem Permission denied',
          byRuntime({ runc: '/proc/1/environ Permission denied', gvisor: '/proc/1/environ OPENED' }),
          '',
          'stderr:',
          frameText,
          '',
          'exit code: 5',
        ].join('\n'),
      );
      assert.equal(r.exitCode, 5);
      await next();
    });
  });

  describe('stopping and falling back', function () {
    it('a timeout kills the program and everything it started; the runner survives', async function () {
      const provider = sandboxes.makeProvider();
      const key = uniqueSessionKey('timeout-group');
      const { id: container } = await warmSandbox(provider, key);
      const code = [
        'import os, subprocess, sys, time',
        'subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])',
        'if os.fork() == 0:',
        '    os.setsid()',
        '    time.sleep(60)',
        'print("started", flush=True)',
        'time.sleep(60)',
      ].join('\n');
      const started = Date.now();
      const r = await run(provider, key, code, { limits: { timeoutMs: 1500 } });
      assert.equal(r.text, `stdout:\nstarted\n\n${SENTENCES.timeout(1.5)}`);
      assert.ok(Date.now() - started < 4000, `took ${Date.now() - started} ms`);
      // Nothing but the runner, and the child it forked ahead for the next call.
      assert.equal(await programProcesses(container), 0);
      const after = await run(provider, key, 'import os\nprint(os.getppid())');
      assert.equal(after.text, 'stdout:\n1');
      assert.equal(after.sandboxId, container);
    });

    it('a frozen runner: the call runs by docker exec, the next call repairs the sandbox', async function () {
      const provider = sandboxes.makeProvider();
      const key = uniqueSessionKey('frozen');
      const { id: container } = await warmSandbox(provider, key);
      await dockerCli('kill', '--signal', 'SIGSTOP', container);
      const r = await run(provider, key, 'import os\nprint("ran", os.getppid())');
      // docker exec's processes have no parent in the container: the fallback ran it.
      assert.equal(r.text, 'stdout:\nran 0');
      const repaired = await run(provider, key, 'import os\nprint("ran", os.getppid())');
      assert.equal(
        repaired.text,
        "stdout:\nran 1\n\nThe sandbox's runner stopped answering, so the sandbox was restarted; files written by earlier calls are gone.",
      );
      assert.equal(repaired.sandboxId, container);
      const after = await run(provider, key, "print('warm again')");
      assert.equal(after.text, 'stdout:\nwarm again');
    });

    it('a runner killed from the host: the call gets a normal result in a replaced sandbox', async function () {
      const provider = sandboxes.makeProvider();
      const key = uniqueSessionKey('killed');
      const { id: container } = await warmSandbox(provider, key);
      await dockerCli('kill', container);
      const r = await run(provider, key, "print('two')");
      assert.equal(r.text, 'stdout:\ntwo\n\nThe sandbox had stopped and was replaced; files written by earlier calls are gone.');
      assert.notEqual(provider.active.get(key)!.id, container);
      // The replacement is a new sandbox: its runner gets ready in its own time.
      await warmSandbox(provider, key);
      const after = await run(provider, key, 'import os\nprint(os.getppid())');
      assert.equal(after.text, 'stdout:\n1');
      assert.notEqual(after.sandboxId, container);
    });

    it('with warmRunner off, PID 1 is the plain keeper and programs run by docker exec', async function () {
      const r = await run(plain, plainKey, 'import os\nprint(os.getppid(), open("/proc/1/cmdline", "rb").read().split(b"\\0")[1])');
      assert.equal(r.text, "stdout:\n0 b'-c'");
      const s = await run(plain, plainKey, 'x = 1');
      assert.equal(s.text, NOTHING_PRINTED);
    });

    it('prewarm creates the sandbox before the first call', async function () {
      const provider = sandboxes.makeProvider();
      const key = uniqueSessionKey('prewarm');
      provider.prewarm(key);
      // Creation takes ~0.2 s here, but far longer on an engine still busy removing the previous
      // tests' containers; what matters is that it happens without a call.
      await waitFor(() => provider.active.has(key), 'the sandbox to be created ahead of its first call');
      const r = await run(provider, key, "print('first')");
      assert.equal(r.text, 'stdout:\nfirst');
      assert.equal(r.sandboxId, provider.active.get(key)!.id);
    });
  });
});
