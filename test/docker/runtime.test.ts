import * as assert from 'node:assert/strict';
import * as os from 'node:os';
import { isToolError } from '../../src/core/errors';
import { engineRuntimes } from '../../src/docker/engine/runtime';
import { TEST_LIMITS, docker, inspect, run, testSpec, uniqueSessionKey, useDocker } from './helpers';

/** What a program sees of the kernel it talks to. */
const KERNEL = 'import platform\nprint(platform.release())';

describe('container runtimes: gVisor and the default (integration)', function () {
  const sandboxes = useDocker();
  let hasRunsc = false;

  before(async function () {
    hasRunsc = (await engineRuntimes(docker)).available.includes('runsc');
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

  it('auto takes runsc on an engine that has it', async function () {
    if (!hasRunsc) this.skip();
    const auto = sandboxes.makeProvider({ spec: () => testSpec({ runtime: 'auto' }) });
    const r = await run(auto, uniqueSessionKey('auto'), KERNEL);
    assert.equal(r.text, 'stdout:\n4.4.0');
    assert.equal(r.runtime, 'runsc');
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
