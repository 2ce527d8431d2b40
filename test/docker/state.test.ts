import * as assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { executeCode, type ExecuteReport, type FilesOutRequest } from '../../src/core/executeCode';
import { NOTHING_PRINTED } from '../../src/core/format';
import type { RunLimits } from '../../src/core/limits';
import { STATE_LINES, SessionStates } from '../../src/core/state';
import type { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { SANDBOX_GONE_NOTE } from '../../src/docker/run/stopped';
import { SENTENCES, TEST_RUNTIME, delay, dockerCli, log, programProcesses, runLimits, uniqueSessionKey, useDocker, waitFor, WAITING_TEST_MS } from './helpers';

/** One call in session mode through the real pipeline, with the host's record of states. */
function call(
  provider: DockerSandboxProvider,
  states: SessionStates,
  sessionKey: string,
  code: string,
  opts: { reset?: boolean; limits?: Partial<RunLimits>; memoryMb?: number; signal?: AbortSignal; outputs?: string[] } = {},
): Promise<ExecuteReport> {
  const filesOut: FilesOutRequest | undefined = opts.outputs && {
    outputs: { mode: 'declared', names: opts.outputs },
    caps: { maxFiles: 5, maxFileBytes: 1024, maxTotalBytes: 1024 },
    sink: async (name, size, body) => {
      for await (const _chunk of body) void _chunk;
      return { name, size };
    },
    savedWhere: 'in the test',
  };
  return executeCode(
    provider,
    log,
    {
      code,
      sessionKey,
      state: { reset: opts.reset === true, states },
      ...(opts.memoryMb !== undefined ? { memoryMb: opts.memoryMb } : {}),
      ...(filesOut ? { filesOut } : {}),
    },
    runLimits(opts.limits),
    opts.signal,
  );
}

const KEPT = STATE_LINES.kept;
const UNCHANGED = STATE_LINES.unchanged;
const QUIET_KEPT = `${NOTHING_PRINTED}\n\n${KEPT}`;
const X_IS_41 = `stdout:\n41\n\n${KEPT}`;

/** A point a program reaches: `code` marks it (a file in the sandbox's home); `reached` resolves once it has. */
function mark(): { code: string; reached(container: string): Promise<true> } {
  const file = JSON.stringify(`/sandbox/home/mark-${randomBytes(4).toString('hex')}`);
  const seen = (container: string) =>
    dockerCli('exec', container, 'python3', '-c', `import os, sys\nsys.exit(0 if os.path.exists(${file}) else 1)`).then(
      () => true as const,
      () => false as const,
    );
  return { code: `open(${file}, 'w').close()`, reached: (container) => waitFor(() => seen(container), `the program to reach its mark in ${container.slice(0, 12)}`) };
}

/** The run directory a traceback names (every call has a fresh one). */
function runDirOf(text: string): string {
  const m = /File "(\/sandbox\/runs\/[0-9]{4,9}-[0-9a-f]{6})\/program\.py"/.exec(text);
  assert.ok(m, text);
  return m[1]!;
}

/** Allocates until memory runs out, 8 MB at a time; its line 5 is where that happens. */
const HOG = "x = 0\nprint('allocating')\nmore = []\nwhile True:\n    more.append(b'\\x02' * (8 * 1024 * 1024))";

describe('session state (integration)', function () {
  const sandboxes = useDocker();

  it('keeps variables, a function and an import for the next call of the chat', async function () {
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('state-keep');
    assert.equal((await call(provider, states, key, 'x = 41')).text, QUIET_KEPT);
    assert.equal((await call(provider, states, key, 'print(x + 1)')).text, `stdout:\n42\n\n${KEPT}`);
    assert.equal((await call(provider, states, key, 'import json\ndef show(v):\n    return json.dumps(v)\nclass P:\n    n = 3')).text, QUIET_KEPT);
    assert.equal((await call(provider, states, key, 'print(show({"a": P.n}), __name__)')).text, `stdout:\n{"a": 3} __main__\n\n${KEPT}`);
    // The generators go on from where the state left them, as in a notebook (a fork would reseed `random`).
    assert.equal((await call(provider, states, key, 'import random\nrandom.seed(7)')).text, QUIET_KEPT);
    const next = 'a = random.random()\nrandom.seed(7)\nprint(a == random.random())';
    assert.equal((await call(provider, states, key, next)).text, `stdout:\nTrue\n\n${KEPT}`);
  });

  it('runs none of the state\'s code between calls: a timer it set is cancelled', async function () {
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('state-timer');
    // A handler that would write (or connect) whenever its timer fires, outside any call.
    const setup = [
      'import os, signal',
      "def tick(*_):\n    open('/sandbox/tmp/ticks', 'a').write('x')",
      'signal.signal(signal.SIGALRM, tick)',
      // First due half a second after it is set: well after this call has ended, so a tick can only
      // come between the calls. (Due at once, a tick could land in the call's own wrap-up, before
      // the timers are cancelled: still inside the call, yet a file the next call finds.)
      'signal.setitimer(signal.ITIMER_REAL, 0.5, 0.05)',
    ].join('\n');
    assert.equal((await call(provider, states, key, setup)).text, QUIET_KEPT);
    // Time on purpose: a running timer would have fired about fifteen times by the next call.
    await delay(1200);
    assert.equal((await call(provider, states, key, "import os\nprint(os.path.exists('/sandbox/tmp/ticks'))")).text, `stdout:\nFalse\n\n${KEPT}`);
  });

  it('leaves the state as the last successful call left it after an exception, exit 3, a timeout, a Stop and an output flood', async function () {
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('state-rollback');
    assert.equal((await call(provider, states, key, 'x = 41')).text, QUIET_KEPT);

    const raised = await call(provider, states, key, "x = 0\nraise ValueError('boom')");
    assert.match(raised.text, /^stderr:\nTraceback \(most recent call last\):\n[\s\S]*\nValueError: boom\n\nexit code: 1\n\n/);
    assert.ok(raised.text.endsWith(`\n\n${UNCHANGED}`), raised.text);
    assert.equal((await call(provider, states, key, 'print(x)')).text, X_IS_41);

    assert.equal((await call(provider, states, key, 'import sys\nx = 0\nsys.exit(3)')).text, `exit code: 3\n\n${UNCHANGED}`);
    assert.equal((await call(provider, states, key, 'print(x)')).text, X_IS_41);

    const slow = await call(provider, states, key, "x = 0\nprint('started')\nwhile True:\n    pass", { limits: { timeoutMs: 2000 } });
    assert.equal(slow.text, `stdout:\nstarted\n\n${SENTENCES.timeout(2)}\n\n${UNCHANGED}`);
    assert.equal((await call(provider, states, key, 'print(x)')).text, X_IS_41);

    const stop = new AbortController();
    const started = mark();
    const stopping = call(provider, states, key, `import time\nx = 0\nprint('started')\n${started.code}\ntime.sleep(60)`, { signal: stop.signal });
    await started.reached(provider.active.get(key)!.id);
    stop.abort();
    assert.equal((await stopping).text, `stdout:\nstarted\n\n${SENTENCES.cancelled}\n\n${UNCHANGED}`);
    assert.equal((await call(provider, states, key, 'print(x)')).text, X_IS_41);

    const flood = await call(provider, states, key, "x = 0\nwhile True:\n    print('y' * 9999)", { limits: { maxOutputBytes: 1024 * 1024, outputBudgetBytes: 600 } });
    assert.equal(flood.outputLimited, true);
    assert.ok(flood.text.endsWith(`The program printed more than 1.0 MB and was stopped. Print summaries instead of whole data sets.\n\n${UNCHANGED}`), flood.text);
    assert.equal((await call(provider, states, key, 'print(x)')).text, X_IS_41);
  });

  it('a program that runs out of memory ends alone and the state stays; under gVisor it meets a limit of its own first', async function () {
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('state-oom');
    assert.equal((await call(provider, states, key, "x = 41\nbig = b'\\x01' * (150 * 1024 * 1024)")).text, QUIET_KEPT);
    const hog = await call(provider, states, key, HOG, { memoryMb: 256 });
    if (TEST_RUNTIME === 'runsc') {
      // Its address space reached what it mapped at its start plus what was free, less the reserve:
      // Python's MemoryError, told as running out of memory.
      const traceback = `Traceback (most recent call last):\n  File "${runDirOf(hog.text)}/program.py", line 5, in <module>\n    more.append(b'\\x02' * (8 * 1024 * 1024))\n                ~~~~~~~~^~~~~~~~~~~~~~~~~~~\nMemoryError`;
      assert.equal(hog.text, `stdout:\nallocating\n\nstderr:\n${traceback}\n\nexit code: 1\n\n${SENTENCES.memory(256)}\n\n${UNCHANGED}`);
    } else {
      assert.equal(hog.text, `stdout:\nallocating\n\nexit code: 137\n\n${SENTENCES.memory(256)}\n\n${UNCHANGED}`);
    }
    assert.equal((await call(provider, states, key, 'print(x, len(big))')).text, `stdout:\n41 157286400\n\n${KEPT}`);
  });

  it('an OOM kill takes the program even when it is smaller than the state (under gVisor: the sandbox, and the result says so)', async function () {
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('state-oom-smaller');
    // The state holds 150 MB; the program lets go of its copy and takes what is left of 256 MB, so
    // it is the smaller process when the kernel has to choose: its oom_score_adj makes it the one.
    assert.equal((await call(provider, states, key, "x = 41\nbig = b'\\x01' * (150 * 1024 * 1024)")).text, QUIET_KEPT);
    const killed = await call(provider, states, key, `del big\n${HOG}`, { memoryMb: 256 });
    if (TEST_RUNTIME === 'runsc') {
      // Its own limit counts address space: letting go of the state's 150 MB gave it that much
      // back while the state still holds the memory, so gVisor's kernel and the program reach
      // the sandbox's limit together, and the whole sandbox ends, the state with it.
      assert.equal(killed.text, `stdout:\nallocating\n\nexit code: 137\n\n${SENTENCES.memory(256)}\n\n${SANDBOX_GONE_NOTE}\n\n${STATE_LINES.ended}`);
      assert.equal((await call(provider, states, key, "print('x' in globals())")).text, `stdout:\nFalse\n\n${SENTENCES.replaced}\n\n${KEPT}`);
      return;
    }
    assert.equal(killed.text, `stdout:\nallocating\n\nexit code: 137\n\n${SENTENCES.memory(256)}\n\n${UNCHANGED}`);
    assert.equal((await call(provider, states, key, 'print(x, len(big))')).text, `stdout:\n41 157286400\n\n${KEPT}`);
  });

  it('a large state is kept call after call, while the holder each call replaces is still going away', async function () {
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('state-large');
    assert.equal((await call(provider, states, key, "big = b'\\x01' * (100 * 1024 * 1024)\nn = 0")).text, QUIET_KEPT);
    const texts: string[] = [];
    for (let i = 1; i <= 12; i++) texts.push((await call(provider, states, key, 'n += 1\nprint(n, len(big))')).text);
    assert.deepEqual(texts, Array.from({ length: 12 }, (_, i) => `stdout:\n${i + 1} 104857600\n\n${KEPT}`));
  });

  it('a fork bomb is stopped and the state survives the kill (under gVisor, a process budget of its own stops it first)', async function () {
    this.timeout(WAITING_TEST_MS);
    const provider = sandboxes.makeProvider({ limits: { pidsLimit: 32 } });
    const states = new SessionStates();
    const key = uniqueSessionKey('state-forkbomb');
    // Under gVisor each process of the bomb costs gVisor 4 to 7 MB: all 32 of them and a state of
    // 100 MB ended the 256 MB sandbox here. Its budget, one process per 8 MB free, holds it below.
    assert.equal((await call(provider, states, key, "x = 41\nbig = b'\\x01' * (100 * 1024 * 1024)")).text, QUIET_KEPT);
    const bomb = ['import os', 'x = 0', 'while True:', '    try:', '        os.fork()', '    except OSError:', '        pass'].join('\n');
    const r = await call(provider, states, key, bomb, { limits: { timeoutMs: 3000 } });
    assert.equal(r.text, `${SENTENCES.timeout(3)}\n\n${UNCHANGED}`);
    assert.equal((await call(provider, states, key, 'print(x, len(big))')).text, `stdout:\n41 104857600\n\n${KEPT}`);
    // Nothing of the bomb is left: the holder is the only process besides PID 1 (once the one it
    // replaced has finished going away) and the next program's process it forked ahead, which
    // waits under the name of a child forked ahead (the middle process it was forked through may
    // wait as the stopped holder's zombie until the holder next runs: not counted).
    const id = provider.active.get(key)!.id;
    await waitFor(async () => (await programProcesses(id)) === 1, 'the holder to be the only process besides PID 1');
  });

  it('reset starts from an empty state; a thread, a child process or a socket left behind is not kept', async function () {
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('state-reset');
    assert.equal((await call(provider, states, key, 'x = 41')).text, QUIET_KEPT);
    const thread = "import threading, time\nx = 0\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()";
    assert.equal((await call(provider, states, key, thread)).text, `${NOTHING_PRINTED}\n\n${STATE_LINES.unkept('it left threads running')}`);
    assert.equal((await call(provider, states, key, 'print(x)')).text, X_IS_41);
    const child = "import subprocess\nx = 0\nchild = subprocess.Popen(['sleep', '30'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)";
    assert.equal((await call(provider, states, key, child)).text, `${NOTHING_PRINTED}\n\n${STATE_LINES.unkept('it left child processes running')}`);
    assert.equal((await call(provider, states, key, 'print(x)')).text, X_IS_41);
    const socket = 'import socket\nx = 0\ns = socket.socket(socket.AF_UNIX)';
    assert.equal((await call(provider, states, key, socket)).text, `${NOTHING_PRINTED}\n\n${STATE_LINES.unkept('it left sockets open')}`);
    assert.equal((await call(provider, states, key, 'print(x)')).text, X_IS_41);

    // A reset call that fails leaves the state as it was, like any other.
    assert.equal((await call(provider, states, key, 'x = 0\nraise SystemExit(4)', { reset: true })).text, `exit code: 4\n\n${UNCHANGED}`);
    assert.equal((await call(provider, states, key, 'print(x)')).text, X_IS_41);
    assert.equal((await call(provider, states, key, "print('x' in globals())", { reset: true })).text, `stdout:\nFalse\n\n${KEPT}`);
    assert.equal((await call(provider, states, key, "print('x' in globals())")).text, `stdout:\nFalse\n\n${KEPT}`);
  });

  it('two chats never see each other’s state, and calls of one chat keep their order', async function () {
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const a = uniqueSessionKey('state-a');
    const b = uniqueSessionKey('state-b');
    assert.equal((await call(provider, states, a, 'x = 41')).text, QUIET_KEPT);
    assert.equal((await call(provider, states, b, "print('x' in globals())")).text, `stdout:\nFalse\n\n${KEPT}`);
    const [one, two, three] = await Promise.all([
      call(provider, states, a, 'x = 1'),
      call(provider, states, a, 'x += 1'),
      call(provider, states, a, 'print(x)'),
    ]);
    assert.deepEqual([one.text, two.text, three.text], [QUIET_KEPT, QUIET_KEPT, `stdout:\n2\n\n${KEPT}`]);
  });

  it('each call gets a fresh directory, earlier ones stay reachable; the state holder cannot be read through /proc', async function () {
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('state-files');
    assert.equal((await call(provider, states, key, "import os\nfirst = os.getcwd()\nopen('a.txt', 'w').write('from the first call')")).text, QUIET_KEPT);
    const second = "print(os.getcwd() != first, open(first + '/a.txt').read(), os.path.exists('a.txt'))";
    assert.equal((await call(provider, states, key, second)).text, `stdout:\nTrue from the first call False\n\n${KEPT}`);
    // Collecting a file stops what a program left running first: never the state's holder.
    const saved = await call(provider, states, key, "x = 41\nopen('out.txt', 'w').write('42')", { outputs: ['out.txt'] });
    assert.equal(saved.text, `${NOTHING_PRINTED}\n\nSaved for the user in the test: out.txt (2 B). The files are not sent to you; describe them or print what you need from them.\n\n${KEPT}`);
    const failedSave = await call(provider, states, key, "import subprocess\nsubprocess.Popen(['sleep', '30'])\nopen('out.txt', 'w').write('0')\nx = 0\nraise SystemExit(1)", { outputs: ['out.txt'] });
    assert.ok(failedSave.text.endsWith(UNCHANGED), failedSave.text);
    assert.equal((await call(provider, states, key, 'print(x)')).text, X_IS_41);
    // The holder (and a previous one that may still be going away) are the only other processes.
    const peek = [
      'import os',
      'seen = set()',
      'for p in sorted(os.listdir("/proc")):',
      '    if p.isdigit() and int(p) not in (1, os.getpid()):',
      '        try:',
      '            open("/proc/%s/mem" % p, "rb").close()',
      '            seen.add("readable")',
      '        except OSError as e:',
      '            seen.add(type(e).__name__)',
      'print(sorted(seen))',
    ].join('\n');
    assert.equal((await call(provider, states, key, peek)).text, `stdout:\n['PermissionError']\n\n${KEPT}`);
  });

  it('a call in fresh mode lets the state go; the next session call says it was lost', async function () {
    this.timeout(WAITING_TEST_MS);
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('state-fresh-between');
    assert.equal((await call(provider, states, key, 'x = 41')).text, QUIET_KEPT);
    const fresh = await executeCode(provider, log, { code: "print('x' in globals())", sessionKey: key }, runLimits());
    assert.equal(fresh.text, 'stdout:\nFalse');
    await waitFor(async () => (await programProcesses(fresh.sandboxId)) === 0, 'the holder to be gone');
    assert.equal((await call(provider, states, key, "print('x' in globals())")).text, `stdout:\nFalse\n\n${STATE_LINES.lost} ${KEPT}`);
  });

  it('says the state was lost when its sandbox was restarted', async function () {
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('state-lost');
    assert.equal((await call(provider, states, key, 'x = 41')).text, QUIET_KEPT);
    await provider.active.get(key)!.restart();
    const r = await call(provider, states, key, "print('x' in globals())");
    assert.equal(r.text, `stdout:\nFalse\n\n${STATE_LINES.lost} ${KEPT}`);
    assert.equal((await call(provider, states, key, "print('x' in globals())")).text, `stdout:\nFalse\n\n${KEPT}`);
  });
});
