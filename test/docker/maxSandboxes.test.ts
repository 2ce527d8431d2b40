import * as assert from 'node:assert/strict';
import { isToolError } from '../../src/core/errors';
import { WAITING_TEST_MS, exists, gate, programRunning, recentLog, run, uniqueSessionKey, useDocker, waitFor } from './helpers';

const EVICTED = (max: number) =>
  `This chat's sandbox was removed to make room for other chats (at most ${max} sandboxes are kept at once), so files written by earlier calls are gone.`;

/** Resolves once the sandbox is gone: the one that makes room is removed in the background. */
const removed = (id: string, what: string) => waitFor(async () => !(await exists(id)), what);

/** Resolves once `key`'s call has said that it waits for room. */
const waitsForRoom = (key: string) => waitFor(() => recentLog(200).includes(`; ${key} waits for one`), `${key} to wait for room`);

describe('at most maxSandboxes sandboxes (integration)', function () {
  this.timeout(WAITING_TEST_MS);
  const sandboxes = useDocker();

  it('past the maximum the least recently used idle sandbox goes, and its chat is told at its next call', async function () {
    const provider = sandboxes.makeProvider({ options: { maxSandboxes: 2 } });
    const [a, b, c] = ['a', 'b', 'c'].map((w) => uniqueSessionKey(`lru-${w}`));
    const ra = await run(provider, a!, 'open("/sandbox/home/kept", "w").write("x")\nprint("a")');
    const rb = await run(provider, b!, 'print("b")');
    // a is the least recently used: c's sandbox takes its place.
    const rc = await run(provider, c!, 'print("c")');
    assert.equal(rc.text, 'stdout:\nc');
    await removed(ra.sandboxId, "a's idle sandbox to make room");
    assert.equal(await exists(rb.sandboxId), true);
    assert.deepEqual([...provider.active.keys()].sort(), [b, c].sort());

    const again = await run(provider, a!, 'import os\nprint(os.path.exists("/sandbox/home/kept"))');
    assert.equal(again.text, `stdout:\nFalse\n\n${EVICTED(2)}`);
    // Now b was the least recently used; told once only.
    await removed(rb.sandboxId, "b's idle sandbox to make room");
    assert.equal((await run(provider, a!, 'print("a again")')).text, 'stdout:\na again');
  });

  it('a spare counts against the maximum: a new chat takes it, and none is made while the maximum is reached', async function () {
    const provider = sandboxes.makeProvider({ options: { maxSandboxes: 2, spareSandboxes: 1 } });
    const a = uniqueSessionKey('spare-first-a');
    const ra = await run(provider, a, 'print("a")');
    // After a's call: a's sandbox and one spare, the maximum.
    const spare = await waitFor(() => provider.spareIds[0], 'the spare made after the first call');
    const rb = await run(provider, uniqueSessionKey('spare-first-b'), 'print("b")');
    assert.equal(rb.sandboxId, spare, 'b took the spare');
    // With a and b idle and at the maximum, no new spare is made: the fill b's call started ends
    // with none (fillSpares joins a fill under way, or makes one of its own that finds no room).
    await provider.fillSpares();
    assert.deepEqual(provider.spareIds, []);
    assert.equal(await exists(ra.sandboxId), true);
  });

  it('when every sandbox is busy a new chat waits for one, and its wait can be cancelled', async function () {
    const provider = sandboxes.makeProvider({ options: { maxSandboxes: 1 } });
    const busy = uniqueSessionKey('busy');
    const { sandboxId: busySandbox } = await run(provider, busy, 'print("warm")');
    // The busy call holds the only sandbox until the test opens its gate.
    const held = gate();
    const long = run(provider, busy, `${held.wait}\nprint("held")`);
    await programRunning(busySandbox);

    // Cancelled while it waits: the call ends at once, the busy one is untouched.
    const abort = new AbortController();
    const cancelledKey = uniqueSessionKey('cancelled');
    const cancelled = run(provider, cancelledKey, 'print("never")', { signal: abort.signal });
    await waitsForRoom(cancelledKey);
    const abortedAt = Date.now();
    abort.abort();
    await assert.rejects(cancelled, (e: unknown) => isToolError(e) && e.code === 'cancelled' && e.modelMessage === 'The run was cancelled before it started.');
    assert.ok(Date.now() - abortedAt < 1000, 'the wait ended at the cancellation');

    const waiterKey = uniqueSessionKey('waiter');
    let waiterDone = false;
    const waiter = run(provider, waiterKey, 'print("after")').finally(() => (waiterDone = true));
    await waitsForRoom(waiterKey);
    assert.equal(waiterDone, false, 'it waits while the busy call runs');
    await held.open(busySandbox);
    const first = await long;
    assert.equal(first.text, 'stdout:\nheld');
    const second = await waiter;
    assert.equal(second.text, 'stdout:\nafter');
    assert.notEqual(second.sandboxId, busySandbox);
    await removed(busySandbox, 'the idle busy sandbox to make room');
  });
});
