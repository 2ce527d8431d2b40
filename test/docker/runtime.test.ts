import * as assert from 'node:assert/strict';
import * as os from 'node:os';
import { isToolError } from '../../src/core/errors';
import { engineRuntimes } from '../../src/docker/engine/runtime';
import { TEST_LIMITS, WAITING_TEST_MS, byEngine, docker, dockerCli, inspect, recentLog, run, testSpec, uniqueSessionKey, useDocker, warmSandbox } from './helpers';

/** What a program sees of the kernel it talks to. */
const KERNEL = 'import platform\nprint(platform.release())';

describe('container runtimes: gVisor and the default (integration)', function () {
  this.timeout(WAITING_TEST_MS);
  const sandboxes = useDocker();
  let hasRunsc = false;

  before(async function () {
    // Podman lists runsc when its configuration names it, but its Docker API runs every container
    // under its default runtime (the sandbox refuses another there: test/docker/podman.test.ts).
    hasRunsc = byEngine({ docker: (await engineRuntimes(docker)).available.includes('runsc'), podman: false });
  });

  it('under runsc the program sees gVisor\'s kernel, under runc the host\'s', async function () {
    if (!hasRunsc) this.skip(); // scripts/ensure-runsc.sh registers it where it can; it says so when it cannot
    const gvisor = sandboxes.makeProvider({ spec: () => testSpec({ runtime: 'runsc' }) });
    const r = await run(gvisor, uniqueSessionKey('runsc'), KERNEL);
    assert.equal(r.text, 'stdout:\n4.4.0');
    assert.equal(r.runtime, 'runsc');
    assert.equal((await inspect(r.sandboxId)).HostConfig.Runtime, 'runsc');

    const plain = sandboxes.makeProvider({ spec: () => testSpec({ runtime: 'runc' }) });
    const p = await run(plain, uniqueSessionKey('runc'), KERNEL);
    assert.equal(p.text, `stdout:\n${os.release()}`);
    assert.equal(p.runtime, 'runc');
  });

  // gVisor checks permissions before the read-only flag: the covered /tmp (root's, 0755) answers EACCES.
  it('keeps /tmp as read-only as the rest of the root under gVisor (which would mount a writable one)', async function () {
    if (!hasRunsc) this.skip();
    const gvisor = sandboxes.makeProvider({ spec: () => testSpec({ runtime: 'runsc' }) });
    const probe = 'for p in ("/tmp/x", "/var/tmp/x"):\n    try:\n        open(p, "w")\n        print(p, "written")\n    except OSError as e:\n        print(p, e.strerror)';
    assert.equal((await run(gvisor, uniqueSessionKey('tmp'), probe)).text, 'stdout:\n/tmp/x Permission denied\n/var/tmp/x Read-only file system');
  });

  it('auto takes runsc on an engine that has it', async function () {
    if (!hasRunsc) this.skip();
    const auto = sandboxes.makeProvider({ spec: () => testSpec({ runtime: 'auto' }) });
    const r = await run(auto, uniqueSessionKey('auto'), KERNEL);
    assert.equal(r.text, 'stdout:\n4.4.0');
    assert.equal(r.runtime, 'runsc');
  });

  it('under runsc the warm runner stays the path: a warm call is a fork of PID 1 and starts no docker exec', async function () {
    if (!hasRunsc) this.skip();
    const gvisor = sandboxes.makeProvider({ spec: () => testSpec({ runtime: 'runsc' }) });
    const key = uniqueSessionKey('runsc-warm');
    const first = await run(gvisor, key, 'print(1)');
    assert.equal(first.text, 'stdout:\n1');
    await warmSandbox(gvisor, key);
    // The engine's clock, not ours: events are filtered by its timestamps.
    const since = (await dockerCli('info', '--format', '{{.SystemTime}}')).trim();
    const r = await run(gvisor, key, 'import os\nprint(os.getppid())');
    assert.equal(r.text, 'stdout:\n1');
    const until = (await dockerCli('info', '--format', '{{.SystemTime}}')).trim();
    const events = await dockerCli('events', '--since', since, '--until', until, '--filter', `container=${r.sandboxId}`, '--filter', 'event=exec_create', '--format', '{{.Action}}');
    assert.equal(events.trim(), '');
  });

  it('under runsc the runner preloads (its capture file works on gVisor\'s mounted work area)', async function () {
    if (!hasRunsc) this.skip();
    const gvisor = sandboxes.makeProvider({ spec: () => testSpec({ runtime: 'runsc', preloadModules: ['decimal'], preloadWhen: 'start' }) });
    const key = uniqueSessionKey('runsc-preload');
    assert.equal((await run(gvisor, key, 'print(1)')).text, 'stdout:\n1');
    const { name } = await warmSandbox(gvisor, key);
    const ready = recentLog(200).split('\n').filter((l) => l.includes(name) && l.includes('runner ready'));
    assert.match(ready.join('\n'), /runner ready \(Python [0-9.]+; preloaded decimal\)/);
  });

  it('a named runtime the engine lacks fails the call with one sentence and creates nothing', async function () {
    const missing = sandboxes.makeProvider({ spec: () => ({ image: testSpec().image, limits: TEST_LIMITS, runtime: 'kata-nowhere' }) });
    await assert.rejects(run(missing, uniqueSessionKey('missing'), 'print(1)'), (e: unknown) => {
      assert.ok(isToolError(e));
      assert.equal(e.code, 'invalid_settings');
      assert.equal(
        e.modelMessage,
        'The Docker engine has no runtime named "kata-nowhere", so the program was not run. Ask the user to install and register it with the engine, or to set the runtime setting to auto.',
      );
      return true;
    });
    assert.equal(missing.active.size, 0);
  });
});
