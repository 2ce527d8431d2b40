import * as assert from 'node:assert/strict';
import { delay, run, uniqueSessionKey, useDocker } from './helpers';

describe('parallel calls of one chat (integration)', function () {
  const sandboxes = useDocker();

  it("a call's time limit counts from its turn, not from when it queued behind the chat's other calls", async function () {
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey('queued');
    await run(provider, key, 'print("warm")');
    const long = run(provider, key, 'import time\ntime.sleep(2.5)\nprint("long")');
    await delay(200);
    // Waits about 2.3 s for its turn, longer than its own 1.5 s limit, then runs in milliseconds.
    const queued = await run(provider, key, 'print("queued")', { limits: { timeoutMs: 1500 } });
    assert.equal(queued.text, 'stdout:\nqueued');
    assert.equal((await long).text, 'stdout:\nlong');
  });
});
