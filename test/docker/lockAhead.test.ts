import * as assert from 'node:assert/strict';
import { sessionDigest } from '../../src/core/session';
import { lockCliSessionAhead } from '../../src/docker/ahead';
import { SandboxLock, sharedSandboxName, type HeldAhead, type LockAhead } from '../../src/docker/container';
import { LABEL } from '../../src/docker/container/labels';
import { TEST_LABEL, containersWith, docker, gate, programRunning, run, uniqueSessionKey, useDocker, waitFor } from './helpers';

/** Whether another process could take the lock of `container` now (asked as the CLI asks: "try"). */
async function lockIsFree(container: string): Promise<boolean> {
  const other = new SandboxLock(docker.getContainer(container));
  const free = await other.tryAcquire(new AbortController().signal);
  other.release();
  return free;
}

/** The lock ahead for `key`, which the engine of these tests must allow (a plain socket). */
function ahead(key: string): LockAhead {
  const made = lockCliSessionAhead(key);
  assert.ok(made, 'the tests talk to an engine named by a plain Unix socket, so a lock can be asked for ahead');
  return made;
}

/**
 * A command-line run on a kept session asks for its lock before the rest of the command line has
 * loaded (src/docker/container/lockAhead.ts); the sandbox it then attaches to uses that lock.
 */
describe('the session lock asked for ahead (integration)', function () {
  this.timeout(120_000);
  const sandboxes = useDocker();

  /** A kept session (as --session keeps one), detached: its sandbox and its id. */
  async function keptSession(what: string): Promise<{ key: string; id: string }> {
    const key = uniqueSessionKey(what);
    const first = sandboxes.makeProvider({ options: { adoptExisting: true } });
    assert.equal((await run(first, key, 'print(1)')).text, 'stdout:\n1');
    await first.detachAll();
    const [id] = await containersWith(TEST_LABEL, `${LABEL.session}=${sessionDigest(key)}`);
    return { key, id: id! };
  }

  it('is held in the session sandbox, and the run that attaches to it keeps that very holder', async () => {
    const { key, id } = await keptSession('ahead');
    const lock = ahead(key);
    // What the provider claims, seen on the way.
    let claimed: HeldAhead | undefined;
    let holder: string | undefined;
    const claim = lock.claim.bind(lock);
    lock.claim = async (signal) => {
      const got = await claim(signal);
      if (!claimed) {
        claimed = got;
        holder = got?.lock.holderExecId;
      }
      return got;
    };
    const provider = sandboxes.makeProvider({ options: { adoptExisting: true, lockAhead: lock } });
    // The call holds the sandbox (and its lock) until the test opens the gate.
    const g = gate();
    const call = run(provider, key, `${g.wait}\nprint(2)`);
    await programRunning(id);
    assert.equal(claimed?.containerId, id);
    // Taken over, not released and taken again: the holder made ahead still runs, and holds the lock.
    assert.equal(claimed?.lock.held, false);
    assert.ok(holder);
    assert.equal((await docker.getExec(holder).inspect()).Running, true);
    assert.equal(await lockIsFree(id), false);
    // Claimed once: nothing is left for a second claim, and cancelling now lets nothing go.
    assert.equal(await lock.claim(new AbortController().signal), undefined);
    lock.cancel();
    assert.equal(await lockIsFree(id), false);
    await g.open(id);
    const r = await call;
    assert.equal(r.text, 'stdout:\n2');
    assert.equal(r.sandboxId, id);
    await provider.detachAll();
    await waitFor(async () => !(await docker.getExec(holder!).inspect()).Running, 'the holder to end once the run let the sandbox go');
    assert.equal(await lockIsFree(id), true);
  });

  it('held and never claimed, it is let go when cancelled', async () => {
    const { key, id } = await keptSession('cancelled');
    const lock = ahead(key);
    // Another process's view: busy once the holder holds it (the claim waits for that), free after cancel.
    const held = await waitFor(async () => !(await lockIsFree(id)), 'the lock asked for ahead to be held');
    assert.equal(held, true);
    lock.cancel();
    assert.equal(await lock.claim(new AbortController().signal), undefined);
    await waitFor(() => lockIsFree(id), 'the lock to be free once cancelled');
  });

  it('waits for a lock another process holds, and a cancelled wait takes nothing', async () => {
    const { key, id } = await keptSession('waits');
    const other = new SandboxLock(docker.getContainer(id));
    await other.acquire(new AbortController().signal);
    try {
      const lock = ahead(key);
      const stop = new AbortController();
      const claimed = lock.claim(stop.signal);
      stop.abort();
      assert.equal(await claimed, undefined);
    } finally {
      other.release();
    }
    await waitFor(() => lockIsFree(id), 'the lock to be free once its holder let it go');
  });

  it('gives nothing for a session without a sandbox, or one whose sandbox is stopped', async () => {
    assert.equal(await ahead(uniqueSessionKey('none')).claim(new AbortController().signal), undefined);
    const { key, id } = await keptSession('stopped');
    await docker.getContainer(id).stop({ t: 0 });
    assert.equal(await ahead(key).claim(new AbortController().signal), undefined);
    // The usual way starts it again and runs.
    const provider = sandboxes.makeProvider({ options: { adoptExisting: true, lockAhead: ahead(key) } });
    const r = await run(provider, key, 'print(3)');
    assert.equal(r.text, 'stdout:\n3');
    assert.equal((await docker.getContainer(sharedSandboxName('cli', sessionDigest(key))).inspect()).Id, r.sandboxId);
  });
});
