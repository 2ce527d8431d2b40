import * as assert from 'node:assert/strict';
import { isToolError } from '../../src/core/errors';
import { delay, exists, run, uniqueSessionKey, useDocker } from './helpers';

const EVICTED = (max: number) =>
  `This chat's sandbox was removed to make room for other chats (at most ${max} sandboxes are kept at once), so files written by earlier calls are gone.`;

describe('at most maxSandboxes sandboxes (integration)', function () {
  const sandboxes = useDocker();

  it('past the maximum the least recently used idle sandbox goes, and its chat is told at its next call', async function () {
    const provider = sandboxes.makeProvider({ options: { maxSandboxes: 2 } });
    const [a, b, c] = ['a', 'b', 'c'].map((w) => uniqueSessionKey(`lru-${w}`));
    const ra = await run(provider, a!, 'open("/sandbox/home/kept", "w").write("x")\nprint("a")');
    const rb = await run(provider, b!, 'print("b")');
    // a is the least recently used: c's sandbox takes its place.
    const rc = await run(provider, c!, 'print("c")');
    assert.equal(rc.text, 'stdout:\nc');
    assert.equal(await exists(ra.sandboxId), false);
    assert.equal(await exists(rb.sandboxId), true);
    assert.deepEqual([...provider.active.keys()].sort(), [b, c].sort());

    const again = await run(provider, a!, 'import os\nprint(os.path.exists("/sandbox/home/kept"))');
    assert.equal(again.text, `stdout:\nFalse\n\n${EVICTED(2)}`);
    // Now b was the least recently used; told once only.
    assert.equal(await exists(rb.sandboxId), false);
    assert.equal((await run(provider, a!, 'print("a again")')).text, 'stdout:\na again');
  });

  it('a spare counts against the maximum: a new chat takes it, and none is made while the maximum is reached', async function () {
    const provider = sandboxes.makeProvider({ options: { maxSandboxes: 2, spareSandboxes: 1 } });
    const a = uniqueSessionKey('spare-first-a');
    const ra = await run(provider, a, 'print("a")');
    // After a's call: a's sandbox and one spare, the maximum.
    for (let i = 0; i < 600 && provider.spareIds.length === 0; i++) await delay(100);
    const [spare] = provider.spareIds;
    assert.ok(spare);
    const rb = await run(provider, uniqueSessionKey('spare-first-b'), 'print("b")');
    assert.equal(rb.sandboxId, spare, 'b took the spare');
    // With a and b idle and at the maximum, no new spare is made.
    await delay(1500);
    assert.deepEqual(provider.spareIds, []);
    assert.equal(await exists(ra.sandboxId), true);
  });

  it('when every sandbox is busy a new chat waits for one, and its wait can be cancelled', async function () {
    this.timeout(180_000);
    const provider = sandboxes.makeProvider({ options: { maxSandboxes: 1 } });
    const busy = uniqueSessionKey('busy');
    await run(provider, busy, 'print("warm")');
    const started = Date.now();
    const long = run(provider, busy, 'import time\ntime.sleep(3)\nprint("slept")');
    await delay(300);

    // Cancelled while it waits: the call ends at once, the busy one is untouched.
    const abort = new AbortController();
    const cancelled = run(provider, uniqueSessionKey('cancelled'), 'print("never")', { signal: abort.signal });
    await delay(500);
    const abortedAt = Date.now();
    abort.abort();
    await assert.rejects(cancelled, (e: unknown) => isToolError(e) && e.code === 'cancelled' && e.modelMessage === 'The run was cancelled before it started.');
    assert.ok(Date.now() - abortedAt < 1000, 'the wait ended at the cancellation');

    const waiter = run(provider, uniqueSessionKey('waiter'), 'print("after")');
    const first = await long;
    assert.equal(first.text, 'stdout:\nslept');
    const second = await waiter;
    assert.equal(second.text, 'stdout:\nafter');
    assert.ok(Date.now() - started >= 3000, 'it ran after the busy call');
    assert.equal(await exists(first.sandboxId), false, 'the idle one made room');
  });
});
