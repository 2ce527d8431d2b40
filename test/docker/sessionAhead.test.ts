import * as assert from 'node:assert/strict';
import { executeCode, type ExecuteReport } from '../../src/core/executeCode';
import { NOTHING_PRINTED } from '../../src/core/format';
import { STATE_LINES, SessionStates } from '../../src/core/state';
import type { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { TEST_RUNTIME, dockerCli, killForkedAhead, log, runLimits, settled, uniqueSessionKey, useDocker } from './helpers';

/**
 * A session call runs in the process its state's holder forked once the last call was over and
 * its files were read: the two forks and the new process's first writes are off the call's way.
 * That fork runs the state's own code (its at-fork hooks, whatever it replaced of the runner's),
 * so PID 1 stops and checks both processes before it answers the host, and the child once more
 * before it is given its call. Each attack here left a process running between calls before the
 * child was checked.
 */
function call(provider: DockerSandboxProvider, states: SessionStates, sessionKey: string, code: string): Promise<ExecuteReport> {
  return executeCode(provider, log, { code, sessionKey, state: { reset: false, states } }, runLimits());
}

/** Run from outside as the sandbox's user: `print(...)` of what it finds in /proc. */
function look(container: string, what: string): Promise<string> {
  const script = [
    'import os',
    'found = []',
    "for p in sorted(os.listdir('/proc'), key=lambda p: int(p) if p.isdigit() else 0):",
    '    if p.isdigit() and int(p) not in (1, os.getpid()):',
    '        try:',
    "            state = open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()[0]",
    "            name = open('/proc/%s/comm' % p).read().strip()",
    "            mine = os.stat('/proc/' + p).st_uid == os.getuid()",
    '        except OSError:',
    '            continue  # gone meanwhile',
    '        if not mine:',
    '            continue',
    `        ${what}`,
    'print(found)',
  ].join('\n');
  return dockerCli('exec', '-u', '65534:65534', container, 'python3', '-c', script).then((out) => out.trim());
}

/** The pid of the process waiting, stopped, for the next call ('[]': none). */
const waiting = (container: string) => look(container, "if state == 'T' and name == 'codeact-waiting': found.append(int(p))");
/** Every process of the sandbox's user but PID 1 that is not stopped or dead: what runs between calls. */
const running = (container: string) => look(container, "if state not in 'TZX': found.append((int(p), name, state))");

const KEPT = STATE_LINES.kept;

/** A daemon (double fork, its own session) that writes for as long as it lives; one, whatever forks after it. */
const DAEMON = [
  'import os, time',
  'started = []',
  'def daemon():',
  '    if started:',
  '        return',
  '    started.append(os.getpid())',
  '    if os.fork() == 0:',
  '        os.setsid()',
  '        if os.fork() == 0:',
  '            while True:',
  "                open('/sandbox/tmp/beat', 'a').write('x')",
  '                time.sleep(0.01)',
  '        os._exit(0)',
].join('\n');

describe('a session call forked ahead from its state (integration)', function () {
  const sandboxes = useDocker();

  it('runs in the process forked ahead once the last call was over, on the state that call left; a failed call changes neither', async function () {
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('ahead');
    const first = await call(provider, states, key, 'import os\nx = 41');
    assert.equal(first.text, `${NOTHING_PRINTED}\n\n${KEPT}`);
    const id = first.sandboxId;
    await settled(provider, key);
    const one = await waiting(id);
    assert.match(one, /^\[\d+\]$/);
    assert.equal((await call(provider, states, key, 'print(x, [os.getpid()])')).text, `stdout:\n41 ${one}\n\n${KEPT}`);
    await settled(provider, key);
    const two = await waiting(id);
    assert.match(two, /^\[\d+\]$/);
    assert.notEqual(two, one);
    const failed = await call(provider, states, key, 'print([os.getpid()])\nx = 0\nraise SystemExit(2)');
    assert.equal(failed.text, `stdout:\n${two}\n\nexit code: 2\n\n${STATE_LINES.unchanged}`);
    // Forked ahead again from the holder the failed call was forked from.
    await settled(provider, key);
    const three = await waiting(id);
    assert.match(three, /^\[\d+\]$/);
    assert.equal((await call(provider, states, key, 'print(x, [os.getpid()])')).text, `stdout:\n41 ${three}\n\n${KEPT}`);
  });

  it('gives the state up when the process forked ahead ends between calls (it can only have run, or been killed from outside)', async function () {
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('ahead-ended');
    const kept = await call(provider, states, key, 'x = 41');
    assert.equal(kept.text, `${NOTHING_PRINTED}\n\n${KEPT}`);
    await settled(provider, key);
    assert.equal(await killForkedAhead(kept.sandboxId), 1);
    const next = await call(provider, states, key, "print('x' in globals())");
    assert.equal(next.text, `stdout:\nFalse\n\n${STATE_LINES.droppedBefore('it ran between calls, continued by something of its own')} ${KEPT}`);
  });

  it("gives the state up when a call's program continues the stopped holder, and keeps nothing the holder did", async function () {
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('ahead-continued');
    assert.equal((await call(provider, states, key, 'import os, signal, time\nx = 41')).text, `${NOTHING_PRINTED}\n\n${KEPT}`);
    await settled(provider, key);
    const continuing = [
      "stopped = [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid())",
      "           and open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()[0] == 'T']",
      'os.kill(stopped[0], signal.SIGCONT)',
      'time.sleep(2)',
      'x = 0',
      'raise SystemExit(1)',
    ].join('\n');
    // PID 1 hears the holder continue: everything goes at once, the program with it.
    assert.equal((await call(provider, states, key, continuing)).text, `exit code: 137\n\n${STATE_LINES.droppedAfter('it ran between calls, continued by something of its own')}`);
    assert.equal((await call(provider, states, key, "print('x' in globals())")).text, `stdout:\nFalse\n\n${KEPT}`);
  });

  it('has the pages its earlier calls wrote copied before it waits: a call that writes the same objects faults on few of them (not under gVisor: no pagemap)', async function () {
    if (TEST_RUNTIME === 'runsc') this.skip();
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('ahead-pages');
    // 120,000 int objects (about 820 pages): adding them up writes each one's reference count.
    assert.equal((await call(provider, states, key, 'import resource\nbig = list(range(10**6, 10**6 + 120_000))')).text, `${NOTHING_PRINTED}\n\n${KEPT}`);
    const count = [
      'before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt',
      'total = sum(big)',
      'faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before',
      "print('many' if faults >= 600 else 'few' if faults <= 60 else faults)",
    ].join('\n');
    // The first process forked ahead has nothing learned to write; its call's end is looked at.
    assert.equal((await call(provider, states, key, count)).text, `stdout:\nmany\n\n${KEPT}`);
    await settled(provider, key);
    assert.equal((await call(provider, states, key, count)).text, `stdout:\nfew\n\n${KEPT}`);
    await settled(provider, key);
    assert.equal((await call(provider, states, key, count)).text, `stdout:\nfew\n\n${KEPT}`);
  });

  it("does not take another process for the one forked ahead when the state's code names it", async function () {
    // The attack needs the next pid ahead of time: gVisor has no ns_last_pid to read it from.
    if (TEST_RUNTIME === 'runsc') this.skip();
    const provider = sandboxes.makeProvider();
    const states = new SessionStates();
    const key = uniqueSessionKey('ahead-named');
    // The child forked ahead says a pid that is free now (once), and the next call's program leaves
    // a process of that pid: taken for the child, it would be spared from every later look.
    const lying = [
      DAEMON,
      'import sys',
      'runner = sys._getframe(1).f_globals',
      "send = runner['_send']",
      'def sending(sock, data, fds=()):',
      "    if data[:1] == b'S' and not os.path.exists('/sandbox/tmp/named'):",
      "        last = int(open('/proc/sys/kernel/ns_last_pid').read())",
      "        open('/sandbox/tmp/named', 'w').write(str(last + 50))",
      "        data = b'S%d' % (last + 50)",
      '    return send(sock, data, fds)',
      "runner['_send'] = sending",
      'x = 41',
    ].join('\n');
    const kept = await call(provider, states, key, lying);
    assert.equal(kept.text, `${NOTHING_PRINTED}\n\n${KEPT}`);
    await settled(provider, key);
    const squat = [
      "named = int(open('/sandbox/tmp/named').read())",
      'while True:',
      '    pid = os.fork()',
      '    if pid == 0:',
      '        if os.getpid() == named:',
      '            os.closerange(0, 4096)  # holds none of the call\'s pipes or link open',
      '            time.sleep(60)',
      '        os._exit(0)',
      '    if pid == named:',
      '        break',
      '    os.waitpid(pid, 0)',
      '    if pid > named:',
      '        break',
      'print(pid == named)',
    ].join('\n');
    const r = await call(provider, states, key, squat);
    assert.equal(r.text, `stdout:\nTrue\n\n${STATE_LINES.unkept('it left child processes running')}`);
    await settled(provider, key);
    assert.equal(await running(kept.sandboxId), '[]');
  });

  // The state each next call ends with: a daemon its own fork starts again is left running by that
  // call (not kept, as any call that leaves a process); one the holder started once is gone.
  const LEFT = STATE_LINES.unkept('it left child processes running');
  const attacks: [string, string, string[]][] = [
    ['an at-fork hook of the child starts a daemon', `${DAEMON}\nos.register_at_fork(after_in_child=daemon)`, [LEFT]],
    ['an at-fork hook of the holder starts a daemon', `${DAEMON}\nos.register_at_fork(after_in_parent=daemon)`, [KEPT]],
    [
      'the child, once it said it is there, starts a daemon from the runner code it runs (replaced by the state)',
      [
        DAEMON,
        'import sys',
        'runner = sys._getframe(1).f_globals',
        "recv, holder = runner['_recv'], []",
        // Once, in the first process but the holder that waits for a message: the child forked ahead.
        'def receiving(sock, nfds=0):',
        "    if holder and os.getpid() != holder[0] and not os.path.exists('/sandbox/tmp/once'):",
        "        open('/sandbox/tmp/once', 'w').close()",
        '        daemon()',
        '    return recv(sock, nfds)',
        "runner['_recv'] = receiving",
        // The process that becomes the holder is this one: its pid is the holder's.
        'holder.append(os.getpid())',
      ].join('\n'),
      // Either PID 1 stopped the child before its daemon was forked (the child, checked, waits;
      // given its call, it forks the daemon, which that call leaves running), or after (the child
      // is refused, and the next call forks its own): a race PID 1 must win neither way.
      [LEFT, KEPT],
    ],
  ];

  for (const [what, arm, then] of attacks) {
    it(`leaves nothing running between calls when ${what}`, async function () {
      const provider = sandboxes.makeProvider();
      const states = new SessionStates();
      const key = uniqueSessionKey('ahead-attack');
      const kept = await call(provider, states, key, `${arm}\nx = 41`);
      assert.equal(kept.text, `${NOTHING_PRINTED}\n\n${KEPT}`);
      await settled(provider, key);
      assert.equal(await running(kept.sandboxId), '[]');
      // The state is still the one the call left, or (under gVisor on a busy machine, once in a few
      // runs of the holder's hook) given up as having run; nothing runs after the next call either.
      const next = await call(provider, states, key, "print(globals().get('x'))");
      const outcomes = [...then.map((line) => `stdout:\n41\n\n${line}`), `stdout:\nNone\n\n${STATE_LINES.droppedBefore('it ran between calls, continued by something of its own')} ${KEPT}`];
      assert.ok(outcomes.includes(next.text), next.text);
      await settled(provider, key);
      assert.equal(await running(kept.sandboxId), '[]');
    });
  }
});
