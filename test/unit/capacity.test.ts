import * as assert from 'node:assert/strict';
import { ToolError } from '../../src/core/errors';
import { RoomWaiters, evictedNote, leastRecentlyUsedIdle } from '../../src/docker/pool/capacity';
import type { RuntimeChoice } from '../../src/docker/engine/runtime';
import type { Entry } from '../../src/docker/pool/lease';
import { FakeClock, settle } from './fakes/clock';
import { FakeSandboxes } from './fakes/sandboxes';

const RUNTIME: RuntimeChoice = { runtime: undefined, name: 'runc', reason: "the engine's default", engine: 'docker' };
const SPEC = { image: 'codeact-sandbox/python:unit', limits: { memoryMb: 256, cpus: 1, pidsLimit: 128, workAreaMb: 64 } };
const OWNER = { kind: 'vscode' as const, host: 'unit-host', pid: 4242, version: '0.0.0-unit' };

describe('capacity: the maximum number of sandboxes (unit)', () => {
  it('the least recently used idle entry: held and retired ones are passed over', async () => {
    const sandboxes = new FakeSandboxes(new FakeClock());
    const entry = async (lastUsed: number, leases: number, retired = false): Promise<Entry> => {
      const sandbox = await sandboxes.create(SPEC, RUNTIME, OWNER, 'digest');
      sandbox.lastUsed = lastUsed;
      return { key: 'session', sandbox, leases, retired };
    };
    const entries: [string, Entry][] = [
      ['held', await entry(1, 1)],
      ['retired', await entry(2, 0, true)],
      ['newer', await entry(4, 0)],
      ['older', await entry(3, 0)],
    ];
    assert.equal(leastRecentlyUsedIdle(entries)?.[0], 'older');
    assert.equal(leastRecentlyUsedIdle(entries.slice(0, 2)), undefined);
  });

  it('notify wakes every waiting call once; a later notify wakes nobody', async () => {
    const waiters = new RoomWaiters();
    const woken: string[] = [];
    const signal = new AbortController().signal;
    void waiters.wait(signal).then(() => woken.push('a'));
    void waiters.wait(signal).then(() => woken.push('b'));
    assert.equal(waiters.size, 2);
    waiters.notify();
    waiters.notify();
    await settle();
    assert.deepEqual(woken, ['a', 'b']);
    assert.equal(waiters.size, 0);
  });

  it('a wait ends in a cancelled ToolError when its signal aborts, or at once when it already had', async () => {
    const waiters = new RoomWaiters();
    const cancelled = new ToolError('cancelled', 'The run was cancelled while it waited for a free sandbox.');
    const abort = new AbortController();
    const waiting = waiters.wait(abort.signal);
    abort.abort();
    await assert.rejects(waiting, cancelled);
    assert.equal(waiters.size, 0);
    await assert.rejects(waiters.wait(abort.signal), cancelled);
    assert.equal(waiters.size, 0);
  });

  it("tells the evicted chat's model why its files are gone", () => {
    assert.equal(
      evictedNote(8),
      "This chat's sandbox was removed to make room for other chats (at most 8 sandboxes are kept at once), so files written by earlier calls are gone.",
    );
  });
});
