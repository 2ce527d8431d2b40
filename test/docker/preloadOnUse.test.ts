/**
 * Preloading on first use (preloadWhen `used`, the default): a sandbox's runner starts small and
 * preloads a module of its list once a fresh program imported it, before it reads the next call.
 * Real engine, real runner; the plain test image, so the list is of standard modules.
 */
import * as assert from 'node:assert/strict';
import { inspect, recentLog, run, testSpec, uniqueSessionKey, useDocker, warmSandbox, WAIT_MS, WAITING_TEST_MS } from './helpers';

const LOADED = 'import sys\nprint([m for m in ("csv", "decimal", "this") if m in sys.modules])';

describe('preloading on first use (integration)', function () {
  this.timeout(WAITING_TEST_MS);
  const sandboxes = useDocker();
  const provider = () => sandboxes.makeProvider({ spec: () => testSpec({ preloadModules: ['csv', 'decimal', 'this'] }) });

  it('starts with none of its list, and preloads what a program imported for the next call', async function () {
    const p = provider();
    const key = uniqueSessionKey('learn');
    await warmSandbox(p, key);
    assert.equal((await run(p, key, LOADED)).text, 'stdout:\n[]');
    assert.equal((await run(p, key, 'import decimal\nprint(decimal.Decimal("1.10") + 1)')).text, 'stdout:\n2.10');
    // The runner said it starts over with decimal; the host greets the new one, which answers once it is set up.
    await warmSandbox(p, key);
    assert.equal((await run(p, key, LOADED)).text, "stdout:\n['decimal']");
    assert.equal((await run(p, key, 'import csv\nprint(csv.QUOTE_ALL)')).text, 'stdout:\n1');
    await warmSandbox(p, key);
    assert.equal((await run(p, key, LOADED)).text, "stdout:\n['csv', 'decimal']");
    // What a program sees is still what `python3 file` gives: the preloaded module is not its own.
    assert.equal((await run(p, key, 'import os\nprint(os.getppid(), __name__)')).text, 'stdout:\n1 __main__');
  });

  it('tries a module whose import would be visible once, and keeps running programs without it', async function () {
    const p = provider();
    const key = uniqueSessionKey('learn-dirty');
    const { name } = await warmSandbox(p, key);
    /** What the host and the runner said about starting over, from this sandbox's log lines. */
    const restarts = () =>
      recentLog(400)
        .split('\n')
        .filter((l) => l.includes(name) && /starts over|starting over|not preloading/.test(l))
        .map((l) => l.replace(/^.*?sandbox \S+ /, ''));
    const zen = await run(p, key, 'import this');
    assert.match(zen.text, /^stdout:\nThe Zen of Python, by Tim Peters\n/);
    // `this` prints when imported: the runner tried it, started over without it, and says so to nobody.
    await warmSandbox(p, key);
    assert.equal((await run(p, key, LOADED)).text, 'stdout:\n[]');
    assert.equal((await run(p, key, 'import this')).text, zen.text);
    assert.equal((await run(p, key, LOADED)).text, 'stdout:\n[]');
    // Once: the second `import this` did not send the runner back to try it again. (Sorted: the
    // runner's log lines and its frames reach the host on two streams.)
    assert.deepEqual(restarts().sort(), [
      'the runner starts over to preload this (a program imported them)',
      'runner: [codeact-runner] programs here imported this: starting over with it preloaded',
      'runner: [codeact-runner] not preloading this: this(printed output)',
    ].sort());
  });

  it('starts over with nothing of the chat: no process an earlier call left, no file a program planted', async function () {
    const p = provider();
    const key = uniqueSessionKey('learn-hostile');
    await warmSandbox(p, key);
    // Modules the next interpreter would import from its current directory, and a process that
    // would outlive its call (its own session, no descriptor of the call's) if the call did not end it.
    const plant = [
      'import os, subprocess, sys',
      'for name in ("select", "ctypes", "decimal"):',
      '    with open("/sandbox/%s.py" % name, "w") as f:',
      '        f.write("open(\'/sandbox/tmp/planted-ran\', \'a\').write(\'%s \' + str(__import__(\'os\').getpid()))\\n" % name)',
      'bg = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True,',
      '                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)',
      'open("/sandbox/tmp/bg.pid", "w").write(str(bg.pid))',
      'print("planted")',
    ].join('\n');
    assert.equal((await run(p, key, plant)).text, 'stdout:\nplanted');
    const alive = 'import os\nprint(os.path.exists("/proc/%s" % open("/sandbox/tmp/bg.pid").read()), os.path.exists("/sandbox/tmp/planted-ran"))';
    // A fresh call's process that let go of its output ends with its call all the same.
    assert.equal((await run(p, key, alive)).text, 'stdout:\nFalse False');
    assert.equal((await run(p, key, 'import csv\nprint(csv.QUOTE_NONE)')).text, 'stdout:\n3');
    await warmSandbox(p, key);
    assert.equal((await run(p, key, LOADED)).text, "stdout:\n['csv']");
    assert.equal((await run(p, key, alive)).text, 'stdout:\nFalse False');
  });

  it("makes the window's next spares with what its chats imported preloaded, and replaces a spare made without it", async function () {
    const p = sandboxes.makeProvider({ spec: () => testSpec({ preloadModules: ['csv', 'decimal', 'this'] }), options: { spareSandboxes: 2 } });
    await p.fillSpares();
    const [first, stale] = p.spareIds;
    const config = async (id: string) => ((await inspect(id)).Config.Cmd as string[]).at(-1);
    assert.deepEqual([await config(first!), await config(stale!)], ['preload=;learn=csv,decimal,this', 'preload=;learn=csv,decimal,this']);
    for (const s of p.spares) assert.ok(await s.warmedUp(WAIT_MS), `spare ${s.name} never warmed up`);
    const a = uniqueSessionKey('learn-window-a');
    assert.equal((await run(p, a, 'import decimal\nprint(decimal.Decimal("0.5") * 2)')).text, 'stdout:\n1.0');
    // The call's runner starts over with decimal: the spare made without it goes, two are made with it.
    await p.fillSpares();
    assert.equal(p.active.get(a)?.id, first);
    assert.equal(p.spareIds.includes(stale!), false);
    assert.equal(p.spares.length, 2);
    for (const s of p.spares) {
      assert.equal(await config(s.id), 'preload=decimal;learn=csv,decimal,this');
      assert.ok(await s.warmedUp(WAIT_MS), `spare ${s.name} never warmed up`);
    }
    // A new chat's first program finds decimal loaded, and programs run as ever.
    const b = uniqueSessionKey('learn-window-b');
    assert.equal((await run(p, b, LOADED)).text, "stdout:\n['decimal']");
    assert.equal((await run(p, b, 'import csv\nprint(csv.QUOTE_MINIMAL)')).text, 'stdout:\n0');
    await warmSandbox(p, b);
    assert.equal((await run(p, b, LOADED)).text, "stdout:\n['csv', 'decimal']");
    assert.match(recentLog(400), /replacing 1 spare sandbox\(es\) to preload what this window's programs imported/);
  });

  it('does not start over once a program made a user site, which the next interpreter would read', async function () {
    const p = provider();
    const key = uniqueSessionKey('learn-user-site');
    await warmSandbox(p, key);
    const site = 'import os, site, sys\nos.makedirs(site.getusersitepackages())\n' +
      'open(os.path.join(site.getusersitepackages(), "x.pth"), "w").write("import os; os.getpid() == 1 and open(\'/sandbox/tmp/pth-in-pid1\', \'w\')\\n")\n' +
      'import decimal\nprint(decimal.Decimal(2))';
    assert.equal((await run(p, key, site)).text, 'stdout:\n2');
    // Not told of a restart, the host has the same runner; later fresh calls see the user site (a new interpreter the runner execs).
    await warmSandbox(p, key);
    assert.equal((await run(p, key, 'import os\nprint(os.path.exists("/sandbox/tmp/pth-in-pid1"))')).text, 'stdout:\nFalse');
  });

  it("counts a call's time limit from its program's start, not from the wait for a runner that starts over", async function () {
    const p = provider();
    const key = uniqueSessionKey('learn-limit');
    const sandbox = await warmSandbox(p, key);
    assert.equal((await run(p, key, 'import decimal\nprint(1)')).text, 'stdout:\n1');
    // At once: the runner said it starts over with decimal, and the call waits for the new one.
    const restartingAtCall = sandbox.runner?.restarting;
    let out = '';
    let restartingAtStart: boolean | undefined;
    const exit = await sandbox.run({
      code: 'import sys\nprint("decimal" in sys.modules)',
      onStdout: (c) => (out += c.toString()),
      onStderr: () => {},
      signal: new AbortController().signal,
      onStart: () => (restartingAtStart = sandbox.runner?.restarting),
    });
    assert.deepEqual([restartingAtCall, restartingAtStart, exit.exitCode, out], [true, false, 0, 'True\n']);
  });
});
