/**
 * The Dev Container backend against the real engine and the real Dev Containers CLI: temporary
 * workspaces whose .devcontainer builds FROM the local test image (no registry needed).
 */
import * as assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ToolError } from '../../src/core/errors';
import type { Logger } from '../../src/core/logger';
import { DEVCONTAINER_LABEL, ensureDevcontainerImage, folderDigest, type EnsureDevcontainerOptions } from '../../src/docker/devcontainer';
import { hardenedHostConfig } from '../../src/docker/container/spec';
import { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { LABEL } from '../../src/docker/container/labels';
import { IMAGE, IMAGE_HINT, TEST_LABEL, TEST_LIMITS, TEST_VERSION, dockerCli, docker, exists, inspect, log, owner, run, uniqueSessionKey, useDocker, waitFor } from './helpers';

const BUILD_FAILED =
  'The Dev Container image could not be built, so the program was not run; the build log is in the CodeAct Sandbox output channel. Ask the user to fix .devcontainer/devcontainer.json (or its Dockerfile) and rebuild, or to switch the sandbox backend to docker.';

/** A logger that keeps every line (and still forwards to the suite's log). */
function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const keep = (level: keyof Logger) => (m: string) => {
    lines.push(`[${level}] ${m}`);
    log[level](m);
  };
  return { lines, debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') };
}

describe('Dev Container backend (integration)', function () {
  this.timeout(180_000);
  useDocker();
  const workspaces: string[] = [];
  const providers: DockerSandboxProvider[] = [];

  function workspaceWith(files: Record<string, string>): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-dc-'));
    workspaces.push(dir);
    for (const [name, content] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      fs.writeFileSync(path.join(dir, name), content);
    }
    return dir;
  }

  function ensure(workspaceFolder: string, more: Partial<EnsureDevcontainerOptions> = {}) {
    return ensureDevcontainerImage({ docker, workspaceFolder, log, labels: { [LABEL.version]: TEST_VERSION }, ...more });
  }

  /** A provider whose spec builds (or finds) the workspace's image at every acquire, as the extension's does. */
  function devcontainerProvider(workspaceFolder: string, logger: Logger = log): DockerSandboxProvider {
    const p = new DockerSandboxProvider({
      docker,
      owner,
      spec: async (signal) => ({ image: (await ensure(workspaceFolder, { signal, log: logger })).image, limits: TEST_LIMITS }),
      imageSettingHint: IMAGE_HINT,
      log: logger,
      idleMs: 0,
    });
    providers.push(p);
    return p;
  }

  /** A typical devcontainer: a non-root remoteUser, an ENTRYPOINT that would break our keeper, a COPY from the context. */
  const typical = (marker: string) => ({
    '.devcontainer/devcontainer.json': [
      '// A typical Dev Container: comments and trailing commas are allowed.',
      '{',
      '  "name": "itest",',
      '  "build": { "dockerfile": "Dockerfile", "context": "." },',
      '  "remoteUser": "dev",',
      '  "containerEnv": { "FROM_CONTAINER_ENV": "1" },',
      '}',
    ].join('\n'),
    '.devcontainer/Dockerfile': [
      `FROM ${IMAGE}`,
      'RUN useradd -m -u 1000 dev',
      'COPY marker.txt /opt/marker.txt',
      'USER dev',
      'ENTRYPOINT ["/bin/false"]',
      '',
    ].join('\n'),
    '.devcontainer/marker.txt': `${marker}\n`,
  });

  after(async function () {
    this.timeout(120_000);
    await Promise.all(providers.map((p) => p.dispose()));
    // Images this process built (labelled with its test version), newest first so parents go last.
    const ids = (await dockerCli('images', '-q', '--no-trunc', '--filter', `label=${TEST_LABEL}`)).split('\n').filter(Boolean);
    for (const id of [...new Set(ids)]) await docker.getImage(id).remove({ force: true }).catch(() => {});
    for (const dir of workspaces) {
      const staging = (await dockerCli('images', '--format', '{{.Repository}}:{{.Tag}}', `codeact-devcontainer/${folderDigest(dir)}`)).split('\n').filter(Boolean);
      for (const t of staging) await docker.getImage(t).remove({ force: true }).catch(() => {});
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('builds the image from .devcontainer and a program sees what the Dockerfile put there', async function () {
    const marker = `marker-${randomBytes(4).toString('hex')}`;
    const dir = workspaceWith(typical(marker));
    const first = await ensure(dir);
    assert.equal(first.built, true);
    assert.equal(first.configFile, '.devcontainer/devcontainer.json');
    assert.match(first.image, new RegExp(`^codeact-devcontainer/${folderDigest(dir)}:[0-9a-f]{16}$`));
    const info = await inspect(first.image, 'image' as 'container');
    assert.equal(info.Config.Labels[LABEL.managed], '1');
    assert.equal(info.Config.Labels[DEVCONTAINER_LABEL.folder], folderDigest(dir));
    // No staging tag is left behind.
    assert.deepEqual(
      (await dockerCli('images', '--format', '{{.Tag}}', `codeact-devcontainer/${folderDigest(dir)}`)).split('\n').filter(Boolean),
      [first.image.split(':')[1]],
    );

    const provider = devcontainerProvider(dir);
    const report = await run(provider, uniqueSessionKey('dc-marker'), "print(open('/opt/marker.txt').read().strip())\n");
    assert.equal(report.text, `stdout:\n${marker}`);
  });

  it('does not rebuild an unchanged configuration, and rebuilds under a new tag when the Dockerfile changes', async function () {
    const dir = workspaceWith(typical('one'));
    const logger = recordingLogger();
    const first = await ensure(dir, { log: logger });
    assert.equal(first.built, true);

    // Unchanged (an unrelated workspace file does not count): the cached image, no build.
    fs.writeFileSync(path.join(dir, 'notes.md'), 'unrelated\n');
    const started = Date.now();
    const again = await ensure(dir, { log: logger });
    assert.deepEqual(again, { ...first, built: false });
    assert.ok(Date.now() - started < 2_000, `took ${Date.now() - started} ms`);
    assert.equal(logger.lines.filter((l) => l.includes('building the Dev Container image')).length, 1);

    // A changed Dockerfile: a new tag, built, and the program sees the change.
    fs.appendFileSync(path.join(dir, '.devcontainer/Dockerfile'), 'USER root\nRUN echo two > /opt/second.txt\nUSER dev\n');
    const provider = devcontainerProvider(dir, logger);
    const key = uniqueSessionKey('dc-rebuild');
    const report = await run(provider, key, "print(open('/opt/second.txt').read().strip())\n");
    assert.equal(report.text, 'stdout:\ntwo');
    const [rebuilt] = [...provider.active.values()].map((s) => s.image);
    assert.notEqual(rebuilt, first.image);
    assert.equal(logger.lines.filter((l) => l.includes('building the Dev Container image')).length, 2);
    // The outdated image of this folder was pruned.
    assert.equal((await dockerCli('images', '-q', first.image)).trim(), '');

    // A changed context file (COPY marker.txt) is a change too.
    fs.writeFileSync(path.join(dir, '.devcontainer/marker.txt'), 'three\n');
    const third = await ensure(dir, { log: logger });
    assert.equal(third.built, true);
    assert.notEqual(third.image, rebuilt);
    const next = await run(provider, key, "print(open('/opt/marker.txt').read().strip())\n");
    assert.equal(next.text, 'stdout:\nthree');
  });

  it('runs the Dev Container sandbox with the same hardening: no network, uid 65534, no mounts, no VOLUME or HEALTHCHECK of its own', async function () {
    const files = typical('net');
    // VOLUME and HEALTHCHECK, as some Dev Container images have: no writable disk, no extra process.
    files['.devcontainer/Dockerfile'] = files['.devcontainer/Dockerfile']!.replace(
      'USER dev',
      'RUN mkdir /data && echo seeded > /data/seed.txt && chmod 777 /data\nVOLUME /data\nHEALTHCHECK --interval=1s CMD touch /data/healthcheck-ran\nUSER dev',
    );
    const dir = workspaceWith(files);
    const provider = devcontainerProvider(dir);
    const key = uniqueSessionKey('dc-hardening');
    const code = [
      'import os, socket',
      'print(os.getuid(), os.getgid())',
      "print(sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]))",
      'try:',
      "    socket.create_connection(('1.1.1.1', 53), timeout=3)",
      "    print('network: yes')",
      'except OSError as e:',
      "    print('network: no')",
      'try:',
      "    open('/opt/new-file', 'w')",
      'except OSError as e:',
      "    print('rootfs: read-only')",
      "print(os.listdir('/data'))",
      'try:',
      "    open('/data/new-file', 'w')",
      'except OSError as e:',
      "    print('volume: read-only')",
    ].join('\n');
    const report = await run(provider, key, code);
    assert.equal(report.text, "stdout:\n65534 65534\n['lo']\nnetwork: no\nrootfs: read-only\n[]\nvolume: read-only");

    const sandbox = [...provider.active.values()][0]!;
    const info = await inspect(sandbox.id);
    assert.equal(info.Config.User, '65534:65534');
    assert.deepEqual(info.Config.Entrypoint, null);
    assert.equal(info.Config.Labels[LABEL.managed], '1');
    assert.equal(info.HostConfig.NetworkMode, 'none');
    const expected = hardenedHostConfig(sandbox.volumeName, TEST_LIMITS);
    for (const k of ['ReadonlyRootfs', 'CapDrop', 'SecurityOpt', 'Memory', 'MemorySwap', 'NanoCpus', 'PidsLimit', 'IpcMode'] as const) {
      assert.deepEqual(info.HostConfig[k], expected[k], k);
    }
    // The image's VOLUME /data is an empty read-only tmpfs, not a writable anonymous volume on disk.
    const mounts = (info.Mounts as { Type: string; Destination: string; RW: boolean }[]).map((m) => [m.Type, m.Destination, m.RW]);
    assert.deepEqual(mounts.sort(), [['tmpfs', '/data', false], ['volume', '/sandbox', true]]);
    assert.deepEqual(info.Config.Healthcheck.Test, ['NONE']);
    assert.equal(info.State.Health, undefined);
    const before = (await dockerCli('volume', 'ls', '-q')).split('\n').filter(Boolean);
    await provider.release(key);
    assert.equal(await exists(sandbox.volumeName, 'volume'), false);
    assert.deepEqual((await dockerCli('volume', 'ls', '-q')).split('\n').filter(Boolean), before.filter((v) => v !== sandbox.volumeName));
  });

  it('turns a broken Dockerfile into a clear model-facing error, with the build output in the log', async function () {
    const dir = workspaceWith({
      '.devcontainer/devcontainer.json': '{ "build": { "dockerfile": "Dockerfile" } }',
      '.devcontainer/Dockerfile': `FROM ${IMAGE}\nRUN echo about-to-fail && this-command-does-not-exist-${process.pid}\n`,
    });
    const logger = recordingLogger();
    const provider = devcontainerProvider(dir, logger);
    const started = Date.now();
    await assert.rejects(run(provider, uniqueSessionKey('dc-broken'), 'print(1)\n'), (e: unknown) => {
      assert.ok(e instanceof ToolError, String(e));
      assert.equal(e.code, 'build_failed');
      assert.equal(e.modelMessage, BUILD_FAILED);
      // The cause (log only) carries the tail of the build output.
      assert.match(String((e.cause as Error).message), new RegExp(`this-command-does-not-exist-${process.pid}`));
      return true;
    });
    assert.ok(Date.now() - started < 60_000);
    const text = logger.lines.join('\n');
    assert.match(text, /devcontainer build: .*about-to-fail/);
    assert.match(text, new RegExp(`this-command-does-not-exist-${process.pid}: not found`));
    assert.match(text, /\[error\] Dev Container build of \.devcontainer\/devcontainer\.json failed/);
    assert.equal((await dockerCli('images', '-q', `codeact-devcontainer/${folderDigest(dir)}`)).trim(), '', 'no image or staging tag left');
    // Nor the container of the failed step (the legacy builder keeps it).
    const leftovers = (await dockerCli('ps', '-a', '--no-trunc', '--format', '{{.Command}}')).split('\n').filter((c) => c.includes(`this-command-does-not-exist-${process.pid}`));
    assert.deepEqual(leftovers, []);
  });

  it('fails fast with a network hint when a Feature needs a registry (offline)', async function () {
    const dir = workspaceWith({
      '.devcontainer/devcontainer.json': JSON.stringify({
        build: { dockerfile: 'Dockerfile' },
        // A registry on this machine that is not there: the same failure as an offline one, with no traffic leaving the machine.
        features: { '127.0.0.1:9/devcontainers/features/common-utils:2': {} },
      }),
      '.devcontainer/Dockerfile': `FROM ${IMAGE}\n`,
    });
    const started = Date.now();
    await assert.rejects(ensure(dir, { timeoutMs: 120_000 }), (e: unknown) => {
      assert.ok(e instanceof ToolError, String(e));
      assert.equal(e.code, 'build_failed');
      assert.match(e.modelMessage, /The build needed network access \(a base image, a Dev Container Feature or a package download\) and could not get it\./);
      return true;
    });
    assert.ok(Date.now() - started < 90_000, `took ${Date.now() - started} ms`);
  });

  it('stops a build when cancelled, and when it runs past its timeout', async function () {
    const token = `itest-${randomBytes(4).toString('hex')}`;
    const slow = (t: string) => ({
      '.devcontainer/devcontainer.json': '{ "build": { "dockerfile": "Dockerfile" } }',
      '.devcontainer/Dockerfile': `FROM ${IMAGE}\nRUN sleep 120 && echo ${t}\n`,
    });
    const abort = new AbortController();
    let sawStep = false;
    const cancelled = ensure(workspaceWith(slow(`${token}-a`)), {
      signal: abort.signal,
      onProgress: (m) => {
        if (/RUN sleep 120/.test(m) && !sawStep) {
          sawStep = true;
          setTimeout(() => abort.abort(), 1_000);
        }
      },
    });
    const t0 = Date.now();
    await assert.rejects(cancelled, (e: unknown) => e instanceof ToolError && e.code === 'cancelled' && e.modelMessage === 'The Dev Container image build was cancelled, so the program was not run.');
    assert.ok(sawStep, 'the build reached its RUN step');
    assert.ok(Date.now() - t0 < 30_000, `took ${Date.now() - t0} ms`);

    const t1 = Date.now();
    await assert.rejects(ensure(workspaceWith(slow(`${token}-b`)), { timeoutMs: 4_000 }), (e: unknown) => {
      assert.ok(e instanceof ToolError);
      assert.equal(e.code, 'build_failed');
      assert.match(e.modelMessage, /^The Dev Container image build did not finish within 0 minutes and was stopped/);
      return true;
    });
    assert.ok(Date.now() - t1 < 30_000, `took ${Date.now() - t1} ms`);

    // The engine stops the build's step when its client goes away: no container of ours keeps running.
    const steps = async () => (await dockerCli('ps', '--no-trunc', '--format', '{{.Command}}')).split('\n').filter((c) => c.includes(token));
    await waitFor(async () => (await steps()).length === 0, 'the steps of the stopped builds to stop running');
  });

  it('builds an image-based configuration, and never runs initializeCommand on the host', async function () {
    const flag = path.join(os.tmpdir(), `codeact-init-${randomBytes(4).toString('hex')}`);
    const dir = workspaceWith({
      '.devcontainer.json': JSON.stringify({ image: IMAGE, initializeCommand: `touch ${flag}`, postCreateCommand: `touch ${flag}` }),
    });
    const built = await ensure(dir);
    assert.equal(built.built, true);
    assert.equal(built.configFile, '.devcontainer.json');
    assert.equal(fs.existsSync(flag), false, 'initializeCommand ran on the host');
    const report = await run(devcontainerProvider(dir), uniqueSessionKey('dc-image'), 'import sys\nprint(sys.version_info[0])\n');
    assert.equal(report.text, 'stdout:\n3');
  });
});
