import * as assert from 'node:assert/strict';
import { WAITING_TEST_MS, delay, gate, programRunning, run, uniqueSessionKey, useDocker } from './helpers';

describe('parallel calls of one chat (integration)', function () {
  this.timeout(WAITING_TEST_MS);
  const sandboxes = useDocker();

  it("a call's time limit counts from its turn, not from when it queued behind the chat's other calls", async function () {
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey('queued');
    const { sandboxId } = await run(provider, key, 'print("warm")');
    // The first call holds the chat's sandbox until the test opens its gate.
    const held = gate();
    const long = run(provider, key, `${held.wait}\nprint("long")`);
    await programRunning(sandboxId);
    let queuedDone = false;
    const queued = run(provider, key, 'print("queued")', { limits: { timeoutMs: 1500 } }).finally(() => (queuedDone = true));
    // On purpose: the queued call waits longer than its own 1.5 s limit before its turn comes.
    await delay(2_500);
    assert.equal(queuedDone, false, 'the queued call waits for its turn');
    await held.open(sandboxId);
    assert.equal((await queued).text, 'stdout:\nqueued');
    assert.equal((await long).text, 'stdout:\nlong');
  });
});
