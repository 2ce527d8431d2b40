import * as assert from 'node:assert/strict';
import { isToolError } from '../../src/core/errors';
import { archiveOf } from '../../src/docker/files/archive';
import { createDockerClient } from '../../src/docker/engine/connection';
import { followProgress } from '../../src/docker/engine/progress';
import { attachSandbox } from '../../src/docker/sandbox/make';
import { resolveEngine } from '../../src/docker/engine/resolve';
import { missingLimits, podmanHost } from '../../src/docker/engine/podmanHost';
import { engineIdentity } from '../../src/docker/engine/identity';
import { chooseRuntime, engineRuntimes } from '../../src/docker/engine/runtime';
import { IMAGE, TEST_ENGINE, TEST_LIMITS, TEST_RUNTIME, byEngine, docker, log, run, testSpec, uniqueSessionKey, useDocker } from './helpers';

/** A rootless Podman service (scripts/ensure-podman.sh --rootless starts one), when the run has it. */
const ROOTLESS_HOST = process.env.CODEACT_TEST_PODMAN_ROOTLESS_HOST || undefined;

/**
 * What the sandbox does differently on Podman so that the same hardening and limits hold, checked
 * on whichever engine the suites talk to (scripts/test.sh runs this file against both).
 */
describe('engine differences: Docker and Podman (integration)', function () {
  const sandboxes = useDocker();

  it('knows the engine from its version answer', async function () {
    assert.equal((await engineIdentity(docker)).kind, TEST_ENGINE);
  });

  it('bounds the work area at workAreaMb: a program writing past it gets "No space left on device"', async function () {
    const provider = sandboxes.makeProvider({ limits: { workAreaMb: 16 } });
    const code = [
      'import os',
      's = os.statvfs("/sandbox")',
      'print(s.f_blocks * s.f_frsize // (1024 * 1024), "MB")',
      'written = 0',
      'try:',
      '    with open("/sandbox/tmp/fill", "wb") as f:',
      '        for _ in range(32):',
      '            f.write(b"x" * (1024 * 1024))',
      '            f.flush()',
      '            written += 1',
      'except OSError as e:',
      '    print(e.strerror, written < 16)',
    ].join('\n');
    assert.equal((await run(provider, uniqueSessionKey('work-area'), code)).text, 'stdout:\n16 MB\nNo space left on device True');
  });

  it('leaves no writable path besides /sandbox: /run, /tmp and /var/tmp (where Podman mounts its own) are read-only', async function () {
    const provider = sandboxes.makeProvider();
    const code = [
      'import errno',
      'for p in ["/run/x", "/tmp/x", "/var/tmp/x", "/x"]:',
      '    try:',
      '        open(p, "w")',
      '        print(p, "written")',
      '    except OSError as e:',
      '        print(p, errno.errorcode[e.errno])',
    ].join('\n');
    const r = await run(provider, uniqueSessionKey('writable'), code);
    assert.equal(r.text, 'stdout:\n/run/x EROFS\n/tmp/x EROFS\n/var/tmp/x EROFS\n/x EROFS');
  });

  it('covers an image\'s VOLUME path with an empty read-only tmpfs (Podman ignores TmpfsOptions: podman#10831)', async function () {
    const tag = `codeact-itest-volume:${process.pid}`;
    const dockerfile = Buffer.from(`FROM ${IMAGE}\nVOLUME /data\n`);
    const stream = await docker.buildImage(archiveOf([{ type: 'file', name: 'Dockerfile', content: dockerfile, mode: 0o644 }]), { t: tag });
    await followProgress(docker, stream);
    try {
      const provider = sandboxes.makeProvider({ image: tag });
      const code = [
        'import errno, os',
        'print(os.listdir("/data"))',
        'try:',
        '    open("/data/x", "w")',
        '    print("written")',
        'except OSError as e:',
        '    print(errno.errorcode[e.errno])',
        's = os.statvfs("/data")',
        'print(s.f_blocks * s.f_frsize <= 1024 * 1024)',
      ].join('\n');
      assert.equal((await run(provider, uniqueSessionKey('volume'), code)).text, 'stdout:\n[]\nEROFS\nTrue');
      await provider.dispose();
    } finally {
      await docker.getImage(tag).remove({ force: true }).catch(() => undefined);
    }
  });

  it('gives the sandbox a bounded number of open files on Podman (which would raise it itself)', async function () {
    if (TEST_ENGINE !== 'podman') this.skip(); // Docker: the engine's own limit, which differs by host
    const provider = sandboxes.makeProvider();
    const r = await run(provider, uniqueSessionKey('nofile'), 'import resource\nprint(resource.getrlimit(resource.RLIMIT_NOFILE))');
    assert.equal(r.text, 'stdout:\n(4096, 4096)');
  });

  it('finds the image by the name it was given, and re-attaches to a sandbox made from it', async function () {
    // Podman stores the test image as localhost/codeact-sandbox/python:bookworm.
    const spec = testSpec();
    const provider = sandboxes.makeProvider();
    const r = await run(provider, uniqueSessionKey('image-name'), 'print(1)');
    assert.equal(r.text, 'stdout:\n1');
    const { available, engineDefault } = await engineRuntimes(docker);
    const runtime = chooseRuntime(spec.runtime, available, engineDefault, 'the runtime setting', TEST_ENGINE);
    const attached = await attachSandbox(docker, r.sandboxId, spec, runtime, log, new AbortController().signal);
    assert.equal(attached.kind, 'attached');
    if (attached.kind === 'attached') await attached.sandbox.unlock();
  });

  it('on Podman refuses a runtime other than its default, which its Docker API would not use', async function () {
    if (TEST_ENGINE !== 'podman' || TEST_RUNTIME) this.skip();
    const { available, engineDefault } = await engineRuntimes(docker);
    const other = available.find((r) => r !== engineDefault);
    if (!other) this.skip();
    const provider = sandboxes.makeProvider({ spec: () => ({ image: testSpec().image, limits: TEST_LIMITS, runtime: other }) });
    await assert.rejects(run(provider, uniqueSessionKey('other-runtime'), 'print(1)'), (e: unknown) => {
      assert.ok(isToolError(e));
      assert.equal(e.code, 'invalid_settings');
      assert.equal(
        e.modelMessage,
        `Podman runs every container of its Docker API under its default runtime (${engineDefault}), so a sandbox cannot run under "${other}" and the program was not run. Ask the user to make ${other} Podman's default runtime (runtime = "${other}" in containers.conf), or to set the runtime setting to auto.`,
      );
      return true;
    });
    assert.equal(provider.active.size, 0);
  });

  it('auto runs under the engine\'s default on Podman, whatever runtimes it lists', async function () {
    if (TEST_ENGINE !== 'podman') this.skip();
    const provider = sandboxes.makeProvider({ spec: () => testSpec({ runtime: 'auto' }) });
    const r = await run(provider, uniqueSessionKey('auto'), 'print(1)');
    assert.equal(r.text, 'stdout:\n1');
    assert.equal(r.runtime, byEngine({ docker: r.runtime, podman: (await engineRuntimes(docker)).engineDefault }));
  });

  it('on a rootless Podman that cannot enforce the limits, makes no sandbox and says why', async function () {
    if (!ROOTLESS_HOST) this.skip();
    const rootless = createDockerClient(resolveEngine({ host: ROOTLESS_HOST }, {}));
    const host = (await podmanHost(rootless))!;
    assert.equal(host.rootless, true);
    const missing = missingLimits(host);
    const provider = sandboxes.makeProvider({ options: { docker: rootless } });
    if (!missing.length) {
      // Where the controllers are delegated (cgroups v2), the sandbox runs there like anywhere.
      assert.equal((await run(provider, uniqueSessionKey('rootless'), 'print(1)')).text, 'stdout:\n1');
      return;
    }
    await assert.rejects(run(provider, uniqueSessionKey('rootless'), 'print(1)'), (e: unknown) => {
      assert.ok(isToolError(e));
      assert.equal(e.code, 'sandbox_failed');
      assert.equal(
        e.modelMessage,
        `The sandbox was not created: rootless Podman on cgroups ${host.cgroupVersion} cannot enforce its limits on ${missing.join(', ')} here, and it does not run without them. Ask the user to use rootful Podman or Docker, or to give rootless Podman those cgroup controllers (cgroups v2 with delegation).`,
      );
      return true;
    });
    assert.equal(provider.active.size, 0);
    assert.equal((await rootless.listContainers({ all: true })).length, 0);
  });
});
