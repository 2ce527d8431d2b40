import * as assert from 'node:assert/strict';
import { ToolError } from '../../src/core/errors';
import { chooseRuntime } from '../../src/docker/engine/runtime';
import { runtimeFromLabels, runtimeLabels } from '../../src/docker/container/labels';

describe('runtime choice (unit)', () => {
  const HINT = 'the codeactSandbox.runtime setting';

  it('auto takes gVisor when the engine lists it, else the engine default', () => {
    assert.deepEqual(chooseRuntime('auto', ['runc', 'runsc'], 'runc', HINT), { runtime: 'runsc', name: 'runsc', reason: 'auto: the engine has gVisor', engine: 'docker' });
    assert.deepEqual(chooseRuntime('auto', ['crun', 'runc'], 'crun', HINT), { runtime: undefined, name: 'crun', reason: 'auto: no gVisor on the engine, so its default', engine: 'docker' });
    assert.deepEqual(chooseRuntime('auto', [], undefined, HINT), { runtime: undefined, name: 'runc', reason: 'auto: no gVisor on the engine, so its default', engine: 'docker' });
  });

  it('auto does not take gVisor for a sandbox with a network allow-list: its own network stack is not proven under the allow-list', () => {
    assert.deepEqual(chooseRuntime('auto', ['runc', 'runsc'], 'runc', HINT, 'docker', true), {
      runtime: undefined,
      name: 'runc',
      reason: "auto: gVisor is not used for a sandbox with a network allow-list, so the engine's default",
      engine: 'docker',
    });
    assert.deepEqual(chooseRuntime('runsc', ['runc', 'runsc'], 'runc', HINT, 'docker', true), { runtime: 'runsc', name: 'runsc', reason: `set by ${HINT}`, engine: 'docker' });
  });

  it('a named runtime is used when the engine has it, and never replaced by another', () => {
    assert.deepEqual(chooseRuntime('runc', ['runc', 'runsc'], 'runc', HINT), { runtime: 'runc', name: 'runc', reason: `set by ${HINT}`, engine: 'docker' });
    assert.throws(
      () => chooseRuntime('runsc', ['runc'], 'runc', HINT),
      (e: unknown) =>
        e instanceof ToolError &&
        e.code === 'invalid_settings' &&
        e.modelMessage ===
          'The Docker engine has no runtime named "runsc", so the program was not run. Ask the user to install and register it with the engine, or to set the codeactSandbox.runtime setting to auto.',
    );
  });

  it('on Podman, auto and its default runtime by name keep the default: its list names runtimes that are configured, not installed', () => {
    assert.deepEqual(chooseRuntime('auto', ['crun', 'kata', 'krun', 'runc', 'runsc'], 'runc', HINT, 'podman'), {
      runtime: undefined,
      name: 'runc',
      reason: 'auto: Podman does not say which runtimes are installed, so its default',
      engine: 'podman',
    });
    assert.deepEqual(chooseRuntime('runc', ['runc', 'runsc'], 'runc', HINT, 'podman'), { runtime: undefined, name: 'runc', reason: `set by ${HINT}, Podman's default`, engine: 'podman' });
  });

  it('on Podman, a runtime other than its default is refused: its Docker API would run the default instead', () => {
    assert.throws(
      () => chooseRuntime('runsc', ['runc', 'runsc'], 'runc', HINT, 'podman'),
      (e: unknown) =>
        e instanceof ToolError &&
        e.code === 'invalid_settings' &&
        e.modelMessage ===
          'Podman runs every container of its Docker API under its default runtime (runc), so a sandbox cannot run under "runsc" and the program was not run. Ask the user to make runsc Podman\'s default runtime (runtime = "runsc" in containers.conf), or to set the codeactSandbox.runtime setting to auto.',
    );
  });

  it('no request means the engine default, named', () => {
    assert.deepEqual(chooseRuntime(undefined, ['runsc'], 'runsc', HINT), { runtime: undefined, name: 'runsc', reason: "the engine's default", engine: 'docker' });
  });

  it("a kept sandbox's labels give back the runtime it was made under, for the same setting only", () => {
    const gvisor = chooseRuntime('auto', ['runc', 'runsc'], 'runc', HINT);
    const labels = runtimeLabels('auto', gvisor);
    assert.deepEqual(runtimeFromLabels(labels, 'auto', 'docker'), gvisor);
    const plain = chooseRuntime(undefined, ['runc'], 'runc', HINT);
    assert.deepEqual(runtimeFromLabels(runtimeLabels(undefined, plain), undefined, 'podman'), { ...plain, engine: 'podman' });
    // Made for another setting, or before sandboxes recorded their runtime: the engine is asked.
    assert.equal(runtimeFromLabels(labels, 'runc', 'docker'), undefined);
    assert.equal(runtimeFromLabels(labels, undefined, 'docker'), undefined);
    assert.equal(runtimeFromLabels({ 'dev.codeact-sandbox.session': 'x' }, 'auto', 'docker'), undefined);
    assert.equal(runtimeFromLabels(undefined, 'auto', 'docker'), undefined);
  });
});
