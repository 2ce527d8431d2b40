/**
 * Preloading on first use (preloadWhen `used`, the default): a sandbox's runner starts small and
 * preloads a module of its list once a fresh program imported it, before it reads the next call.
 * Real engine, real runner; the plain test image, so the list is of standard modules.
 */
import * as assert from 'node:assert/strict';
import { recentLog, run, testSpec, uniqueSessionKey, useDocker, warmSandbox, WAITING_TEST_MS } from './helpers';

const LOADED = 'import sys\nprint([m for m in ("decimal", "fractions", "this") if m in sys.modules])';

describe('preloading on first use (integration)', function () {
  this.timeout(WAITING_TEST_MS);
  const sandboxes = useDocker();
  const provider = () => sandboxes.makeProvider({ spec: () => testSpec({ preloadModules: ['decimal', 'fractions', 'this'] }) });

  it('starts with none of its list, and preloads what a program imported for the next call', async function () {
    const p = provider();
    const key = uniqueSessionKey('learn');
    await warmSandbox(p, key);
    assert.equal((await run(p, key, LOADED)).text, 'stdout:\n[]');
    assert.equal((await run(p, key, 'import decimal\nprint(decimal.Decimal("1.10") + 1)')).text, 'stdout:\n2.10');
    // The runner said it starts over with decimal; the host greets the new one, which answers once it is set up.
    await warmSandbox(p, key);
    assert.equal((await run(p, key, LOADED)).text, "stdout:\n['decimal']");
    assert.equal((await run(p, key, 'import fractions\nprint(fractions.Fraction(1, 3) * 3)')).text, 'stdout:\n1');
    await warmSandbox(p, key);
    assert.equal((await run(p, key, LOADED)).text, "stdout:\n['decimal', 'fractions']");
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
});
