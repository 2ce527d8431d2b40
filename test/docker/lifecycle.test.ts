import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as os from 'node:os';
import { isToolError } from '../../src/core/errors';
import { sessionDigest } from '../../src/core/session';
import { processIsAlive, removeOrphanedSandboxes } from '../../src/docker/pool/cleanup';
import type { DockerSandbox } from '../../src/docker/sandbox/dockerSandbox';
import { createSandbox } from '../../src/docker/sandbox/make';
import { chooseRuntime } from '../../src/docker/engine/runtime';
import { LABEL, ownerLabels, type Owner } from '../../src/docker/container/labels';
import {
  IMAGE,
  SENTENCES,
  TEST_LIMITS,
  TEST_ENGINE,
  TEST_VERSION,
  WAITING_TEST_MS,
  docker,
  exists,
  inspect,
  log,
  owner,
  run,
  uniqueSessionKey,
  useDocker,
  waitFor,
} from './helpers';

const ENGINE_DEFAULT_RUNTIME = chooseRuntime(undefined, [], undefined, 'test', TEST_ENGINE);

/** The pid of a process that has exited: what a crashed window leaves in its labels. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

describe('sandbox lifecycle (integration)', function () {
  const sandboxes = useDocker();

  describe('orphan cleanup', function () {
    let sleeper: ChildProcess | undefined;
    const created: DockerSandbox[] = [];
    after(async function () {
      sleeper?.kill('SIGKILL');
      await Promise.all(created.map((s) => s.remove()));
    });

    it('removes the sandboxes of a window that is gone and keeps all others', async function () {
      const gone = await deadPid();
      assert.equal(processIsAlive(gone), false);
      sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 120000)'], { stdio: 'ignore' });
      const livePid = sleeper.pid!;
      const host = os.hostname();
      const window = (pid: number, h = host): Owner => ({ kind: 'vscode', host: h, pid, version: TEST_VERSION });
      const spec = { image: IMAGE, limits: TEST_LIMITS };
      const make = async (o: Owner, what: string) => {
        const s = await createSandbox({ docker, spec, runtime: ENGINE_DEFAULT_RUNTIME, owner: o, sessionDigest: sessionDigest(uniqueSessionKey(what)), log });
        created.push(s);
        return s;
      };

      // Orphans from earlier runs of anything else on this machine would be counted too.
      const before = await removeOrphanedSandboxes(docker, { ...owner, kind: 'vscode' }, log);
      const orphan = await make(window(gone), 'orphan');
      const mine = await make(window(process.pid), 'mine');
      const otherLiveWindow = await make(window(livePid), 'live-window');
      const otherMachine = await make(window(gone, `${host}-other-machine`), 'other-machine');
      const cliSession = await make({ ...owner, pid: gone }, 'cli-session');
      // A volume whose container was never created (a crash between the two calls).
      const danglingVolume = `codeact-itest-dangling-${process.pid}`;
      await docker.createVolume({ Name: danglingVolume, Labels: ownerLabels(window(gone), sessionDigest('dangling')) });
      const liveDanglingVolume = `codeact-itest-dangling-live-${process.pid}`;
      await docker.createVolume({ Name: liveDanglingVolume, Labels: ownerLabels(window(livePid), sessionDigest('dangling-live')) });

      const removed = await removeOrphanedSandboxes(docker, { ...owner, kind: 'vscode' }, log);
      assert.equal(removed, 1, `removed ${removed} (${before} orphans were there before)`);
      assert.equal(await exists(orphan.id), false, 'orphaned container');
      assert.equal(await exists(orphan.volumeName, 'volume'), false, 'orphaned volume');
      assert.equal(await exists(danglingVolume, 'volume'), false, 'dangling volume of the gone window');
      for (const kept of [mine, otherLiveWindow, otherMachine, cliSession]) {
        assert.equal((await inspect(kept.id)).State.Running, true, `${kept.name} was kept running`);
        assert.equal(await exists(kept.volumeName, 'volume'), true, `${kept.name}'s volume was kept`);
      }
      assert.equal(await exists(liveDanglingVolume, 'volume'), true, 'dangling volume of a live window');
      await docker.getVolume(liveDanglingVolume).remove();
    });
  });

  it('applies changed limits at the next call by replacing the sandbox', async function () {
    let limits = { ...TEST_LIMITS, memoryMb: 160 };
    const provider = sandboxes.makeProvider({ spec: () => ({ image: IMAGE, limits }) });
    const key = uniqueSessionKey('settings');
    const first = await run(provider, key, "print('one')");
    const again = await run(provider, key, "print('two')");
    assert.equal(first.text, 'stdout:\none');
    assert.equal(again.text, 'stdout:\ntwo');
    assert.equal(again.sandboxId, first.sandboxId, 'unchanged settings keep the sandbox');
    const oldVolume = (await inspect(first.sandboxId)).Mounts[0].Name as string;
    assert.equal((await inspect(first.sandboxId)).HostConfig.Memory, 160 * 1024 * 1024);

    limits = { ...limits, memoryMb: 224 };
    const changed = await run(provider, key, "print('three')");
    assert.equal(changed.text, 'stdout:\nthree');
    assert.notEqual(changed.sandboxId, first.sandboxId);
    assert.equal((await inspect(changed.sandboxId)).HostConfig.Memory, 224 * 1024 * 1024);
    assert.equal(await exists(first.sandboxId), false, 'the old container is removed');
    assert.equal(await exists(oldVolume, 'volume'), false, 'the old volume is removed');
    assert.equal((await inspect(changed.sandboxId)).Config.Labels[LABEL.session], sessionDigest(key));
  });

  it('fails with image_unavailable naming the setting when the image cannot be had', async function () {
    this.timeout(30_000);
    const image = 'codeact-sandbox/does-not-exist:nope';
    const hint = 'the setting codeactSandbox.image (from the test)';
    const provider = sandboxes.makeProvider({ image, imageSettingHint: hint });
    const started = Date.now();
    const error = await run(provider, uniqueSessionKey('noimage'), "print('never')").then(
      () => assert.fail('the call should have failed'),
      (e: unknown) => e,
    );
    const elapsed = Date.now() - started;
    assert.ok(isToolError(error), String(error));
    assert.equal(error.code, 'image_unavailable');
    assert.equal(error.modelMessage, SENTENCES.imageUnavailable(image, hint));
    assert.ok(elapsed < 20_000, `took ${elapsed} ms`);
    assert.equal(provider.active.size, 0);
  });

  it('removes an idle sandbox after the idle time, and the next call creates a new one', async function () {
    this.timeout(WAITING_TEST_MS);
    const idleMs = 1500;
    const provider = sandboxes.makeProvider({ idleMs });
    const key = uniqueSessionKey('idle');
    const first = await run(provider, key, "print('one')");
    assert.equal(first.text, 'stdout:\none');
    const { lastUsed } = provider.active.get(key)!;
    // A look that ends before the idle time is over must find it; one that ends later may not
    // (on a slow machine docker inspect alone can take that long).
    const there = await exists(first.sandboxId);
    assert.ok(there || Date.now() - lastUsed >= idleMs, 'still there before the idle time');
    await waitFor(async () => !(await exists(first.sandboxId)), 'the idle sandbox to be removed');
    assert.equal(provider.active.size, 0);
    const second = await run(provider, key, "print('two')");
    assert.equal(second.text, 'stdout:\ntwo');
    assert.notEqual(second.sandboxId, first.sandboxId);
  });
});
