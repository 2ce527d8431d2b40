import * as assert from 'node:assert/strict';
import { ALONE_WITH_PID1, FORGE_EXIT_REPORT, WAITING_TEST_MS, programProcesses, run, uniqueSessionKey, useDocker, waitFor, warmSandbox } from './helpers';

/**
 * Only the warm runner reports an exit early: each test first waits for its sandbox's runner, or
 * a slow machine's first call would run by docker exec and test nothing of it.
 */
describe('the warm runner reports an exit before the process is gone (integration)', function () {
  this.timeout(WAITING_TEST_MS);
  const sandboxes = useDocker();

  /** The runner stops a child that reported its exit once its grace is over (the runner's DYING_GRACE_S). */
  const stoppedAfterGrace = (container: string) => waitFor(async () => (await programProcesses(container)) === 0, 'the runner to stop the process after its grace');

  it('answers once Python has finished, though a C-level exit handler never returns; the process is stopped later', async function () {
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey('exit-handler');
    const sandbox = await warmSandbox(provider, key);
    // libc's pause() as an atexit handler: the process never leaves exit(). Python's own exit is
    // complete (output flushed, atexit run), so the result is the program's.
    const code = [
      'import atexit, ctypes',
      "libc = ctypes.CDLL('libc.so.6')",
      // atexit() itself is not exported by glibc; it is __cxa_atexit(fn, arg, dso) underneath.
      'libc.__cxa_atexit(libc.pause, None, None)',
      "atexit.register(lambda: print('python atexit ran'))",
      "print('done')",
    ].join('\n');
    const r = await run(provider, key, code, { limits: { timeoutMs: 30_000 } });
    assert.equal(r.text, 'stdout:\ndone\npython atexit ran');
    assert.equal(r.exitCode, 0);
    assert.equal(r.timedOut, false);

    await stoppedAfterGrace(sandbox.id);
    const ps = await run(provider, key, ALONE_WITH_PID1);
    assert.equal(ps.text, 'stdout:\nTrue');
  });

  it('a program that fakes the report gets its fake exit, and keeps running no longer than the grace', async function () {
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey('forged-exit');
    const sandbox = await warmSandbox(provider, key);
    // The shared page is in the program's own address space (a rw shared mapping: the status's
    // 4 KB page, and 32 KB of room for the pages it copied); a program may write it, close its
    // output and go on: it only lies about its own result.
    const code = [
      'import ctypes, os, sys',
      "pages = [l.split()[0] for l in open('/proc/self/maps') if ' rw-s ' in l]",
      'start, end = (int(x, 16) for x in pages[-1].split("-"))',
      'assert end - start == 4096 * 9, (start, end)',
      'ctypes.c_uint32.from_address(start + 4).value = 0',
      "ctypes.c_uint32.from_address(start).value = 0x43584954",
      "print('forged', flush=True)",
      'os.close(1)',
      'os.close(2)',
      'while True:',
      '    pass',
    ].join('\n');
    const r = await run(provider, key, code, { limits: { timeoutMs: 30_000 } });
    assert.equal(r.text, 'stdout:\nforged');
    assert.equal(r.exitCode, 0);

    await stoppedAfterGrace(sandbox.id);
    const ps = await run(provider, key, ALONE_WITH_PID1);
    assert.equal(ps.text, 'stdout:\nTrue');
  });

  it('a program that closes its output and goes on is still timed out (no report, no early answer)', async function () {
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey('closed-output');
    await warmSandbox(provider, key);
    const code = ["print('bye', flush=True)", 'import os', 'os.close(1)', 'os.close(2)', 'while True:', '    pass'].join('\n');
    const r = await run(provider, key, code, { limits: { timeoutMs: 2_000 } });
    assert.equal(r.timedOut, true);
    assert.equal(r.exitCode, null);
    const ps = await run(provider, key, ALONE_WITH_PID1);
    assert.equal(ps.text, 'stdout:\nTrue');
  });

  it('ends a daemon a fresh program left (its own session, output closed) with the call, before the answer', async function () {
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey('daemon');
    await warmSandbox(provider, key);
    // The classic daemon: fork, setsid, fork again, output to /dev/null; the parent exits at once.
    const code = [
      'import os, time',
      'if os.fork() == 0:',
      '    os.setsid()',
      '    if os.fork() == 0:',
      "        null = os.open('/dev/null', os.O_RDWR)",
      '        for fd in (0, 1, 2):',
      '            os.dup2(null, fd)',
      '        time.sleep(600)',
      '    os._exit(0)',
      'os.wait()',
      "print('daemon started')",
    ].join('\n');
    const r = await run(provider, key, code);
    assert.equal(r.text, 'stdout:\ndaemon started');
    // No wait: the daemon was gone before the first call answered.
    const ps = await run(provider, key, ALONE_WITH_PID1);
    assert.equal(ps.text, 'stdout:\nTrue');
  });

  it('ends a program that faked its exit report with the call, and what it forks after it', async function () {
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey('forged-fork');
    await warmSandbox(provider, key);
    // It says it exited, closes its output, then forks children of their own session for as long as it lives.
    const code = [
      'import ctypes, os, time',
      ...FORGE_EXIT_REPORT,
      "print('forged', flush=True)",
      'os.close(1)',
      'os.close(2)',
      'while True:',
      '    if os.fork() == 0:',
      '        os.setsid()',
      '        time.sleep(600)',
      '    time.sleep(0.01)',
    ].join('\n');
    const r = await run(provider, key, code, { limits: { timeoutMs: 30_000 } });
    assert.equal(r.text, 'stdout:\nforged');
    // No wait for its grace: nothing of it was left when the call answered.
    const ps = await run(provider, key, ALONE_WITH_PID1);
    assert.equal(ps.text, 'stdout:\nTrue');
  });

  it('leaves nothing of a fork under way when a program that faked its exit report is killed', async function () {
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey('forged-forks');
    await warmSandbox(provider, key);
    // Four threads each forking without pause (each keeps one child, replaced at the next fork):
    // when the end-of-call kill comes, a fork is under way. gVisor lets such a fork finish after
    // the SIGKILL (Linux fails it), so its child outlives the kill unless the sweep waits for the
    // program to be gone before it looks for what is left.
    const code = [
      'import ctypes, os, signal, threading, time',
      ...FORGE_EXIT_REPORT,
      "print('forged', flush=True)",
      "null = os.open('/dev/null', os.O_RDWR)",
      'def forker():',
      '    child = 0',
      '    while True:',
      '        try:',
      '            pid = os.fork()',
      '        except OSError:',
      '            continue',
      '        if pid == 0:',
      '            os.dup2(null, 1)',
      '            os.dup2(null, 2)',
      '            os.setsid()',
      '            time.sleep(600)',
      '            os._exit(0)',
      '        if child:',
      '            os.kill(child, signal.SIGKILL)',
      '            os.waitpid(child, 0)',
      '        child = pid',
      'for _ in range(4):',
      '    threading.Thread(target=forker, daemon=True).start()',
      'time.sleep(0.3)',
      'os.close(1)',
      'os.close(2)',
      'time.sleep(600)',
    ].join('\n');
    for (let i = 0; i < 5; i++) {
      const r = await run(provider, key, code, { limits: { timeoutMs: 30_000 } });
      assert.equal(r.text, 'stdout:\nforged');
      const ps = await run(provider, key, ALONE_WITH_PID1);
      assert.equal(ps.text, 'stdout:\nTrue', `after run ${i + 1}`);
    }
  });
});

