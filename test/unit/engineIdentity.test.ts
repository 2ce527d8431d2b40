import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { identifyEngine } from '../../src/docker/engine/identity';
import { missingLimits, parsePodmanHost, unenforceableLimits } from '../../src/docker/engine/podmanHost';
import { hardenedHostConfig, workAreaVolumeOptions } from '../../src/docker/container/spec';
import { hasAllLabels } from '../../src/docker/container/labels';
import { reportedImageMatches } from '../../src/docker/container/podmanSpec';

/** GET /version as each engine answered it on a Debian bookworm machine (captured, not written). */
function captured(file: string): unknown {
  return JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures/engine', file), 'utf8'));
}

const LIMITS = { memoryMb: 256, cpus: 1, pidsLimit: 128, workAreaMb: 64 };

describe('engine identity (unit)', () => {
  it('reads Docker and Podman from their own version answers', () => {
    assert.deepEqual(identifyEngine(captured('docker-20.10-version.json')), { kind: 'docker', version: '20.10.24+dfsg1', label: 'Docker 20.10.24+dfsg1' });
    assert.deepEqual(identifyEngine(captured('podman-4.3-version.json')), { kind: 'podman', version: '4.3.1', label: 'Podman 4.3.1' });
  });

  it('takes anything it cannot read for Docker, the API it speaks', () => {
    assert.deepEqual(identifyEngine({}), { kind: 'docker', version: 'unknown', label: 'Docker unknown' });
    assert.deepEqual(identifyEngine('not json'), { kind: 'docker', version: 'unknown', label: 'Docker unknown' });
    assert.deepEqual(identifyEngine({ Version: '27.1.1', Components: null }), { kind: 'docker', version: '27.1.1', label: 'Docker 27.1.1' });
    // Podman Desktop and podman machine forward the same service: the component says it.
    assert.deepEqual(identifyEngine({ Version: '5.2.0', Components: [{ Name: 'Podman Engine', Version: '5.2.0' }] }), {
      kind: 'podman',
      version: '5.2.0',
      label: 'Podman 5.2.0',
    });
  });
});

describe('Podman host: can it enforce the limits (unit)', () => {
  it('reads rootful and rootless Podman from libpod\'s own info, as captured', () => {
    const rootful = parsePodmanHost(captured('podman-4.3-rootful-libpod-info.json'))!;
    assert.deepEqual(rootful, {
      rootless: false,
      cgroupVersion: 'v1',
      controllers: ['cpuset', 'cpu', 'cpuacct', 'blkio', 'memory', 'devices', 'freezer', 'pids'],
      ociRuntime: 'runc',
    });
    assert.deepEqual(missingLimits(rootful), []);
    const rootless = parsePodmanHost(captured('podman-4.3-rootless-libpod-info.json'))!;
    assert.deepEqual(rootless, { rootless: true, cgroupVersion: 'v1', controllers: [], ociRuntime: 'runc' });
    assert.deepEqual(missingLimits(rootless), ['memory', 'CPU', 'processes']);
  });

  it('names what cannot be enforced, and how to get it, in one sentence', () => {
    const e = unenforceableLimits({ rootless: true, cgroupVersion: 'v2', controllers: ['cpu'] }, ['memory', 'processes']);
    assert.equal(e.code, 'sandbox_failed');
    assert.equal(
      e.modelMessage,
      'The sandbox was not created: rootless Podman on cgroups v2 cannot enforce its limits on memory, processes here, and it does not run without them. Ask the user to use rootful Podman or Docker, or to give rootless Podman those cgroup controllers (cgroups v2 with delegation).',
    );
  });

  it('reads nothing into an answer that is not libpod\'s', () => {
    assert.equal(parsePodmanHost({ message: 'page not found' }), undefined);
    assert.equal(parsePodmanHost('404 page not found'), undefined);
  });
});

describe('Podman adaptations of the hardening (unit)', () => {
  it('bounds the work area by nr_blocks (4 KiB pages), since Podman refuses size= on a volume', () => {
    assert.deepEqual(workAreaVolumeOptions('v', LIMITS, { a: 'b' }, 'podman').DriverOpts, {
      type: 'tmpfs',
      device: 'tmpfs',
      o: 'nr_blocks=16384,uid=65534,gid=65534,mode=0700',
    });
    assert.deepEqual(workAreaVolumeOptions('v', LIMITS, { a: 'b' }).DriverOpts, { type: 'tmpfs', device: 'tmpfs', o: 'size=64m,uid=65534,gid=65534,mode=0700' });
  });

  it('covers Podman\'s writable tmpfs paths and the image\'s volumes read-only, through HostConfig.Tmpfs', () => {
    const podman = hardenedHostConfig('v', LIMITS, ['/data'], undefined, 'podman');
    assert.deepEqual(podman.Tmpfs, {
      '/data': 'ro,size=1m,mode=0755',
      '/run': 'ro,size=1m,mode=0755',
      '/tmp': 'ro,size=1m,mode=0755',
      '/var/tmp': 'ro,size=1m,mode=0755',
    });
    assert.deepEqual(podman.Mounts, [{ Type: 'volume', Source: 'v', Target: '/sandbox', ReadOnly: false }]);
    const docker = hardenedHostConfig('v', LIMITS, ['/data']);
    assert.equal(docker.Tmpfs, undefined);
    assert.deepEqual(docker.Mounts?.map((m) => [m.Type, m.Target]), [
      ['volume', '/sandbox'],
      ['tmpfs', '/data'],
    ]);
  });

  it('names nofile and nproc on Podman (which would raise them itself), and keeps gVisor\'s nproc', () => {
    assert.deepEqual(hardenedHostConfig('v', LIMITS, [], undefined, 'podman').Ulimits, [
      { Name: 'core', Soft: 0, Hard: 0 },
      { Name: 'nofile', Soft: 4096, Hard: 4096 },
      { Name: 'nproc', Soft: 16384, Hard: 16384 },
    ]);
    assert.deepEqual(hardenedHostConfig('v', LIMITS, [], 'runsc', 'podman').Ulimits, [
      { Name: 'core', Soft: 0, Hard: 0 },
      { Name: 'nofile', Soft: 4096, Hard: 4096 },
      { Name: 'nproc', Soft: 128, Hard: 128 },
    ]);
    assert.deepEqual(hardenedHostConfig('v', LIMITS).Ulimits, [{ Name: 'core', Soft: 0, Hard: 0 }]);
  });

  it('knows an image by the qualified name Podman reports for it', () => {
    assert.equal(reportedImageMatches('localhost/codeact-sandbox/python:bookworm', 'codeact-sandbox/python:bookworm', 'podman'), true);
    assert.equal(reportedImageMatches('registry.example/library/python:3.12-slim', 'python:3.12-slim', 'podman'), true);
    assert.equal(reportedImageMatches('registry.example/library/python:latest', 'python', 'podman'), true);
    assert.equal(reportedImageMatches('registry.example:5000/team/py:1', 'team/py:1', 'podman'), true);
    assert.equal(reportedImageMatches('codeact-sandbox/python:bookworm', 'codeact-sandbox/python:bookworm', 'podman'), true);
    // Another image whose name only ends the same way, or another tag, is not it.
    assert.equal(reportedImageMatches('localhost/evil/codeact-sandbox/python:bookworm', 'codeact-sandbox/python:bookworm', 'podman'), false);
    assert.equal(reportedImageMatches('localhost/codeact-sandbox/python:trixie', 'codeact-sandbox/python:bookworm', 'podman'), false);
    assert.equal(reportedImageMatches('registry.example/library/python:latest', 'python:3.12', 'podman'), false);
    // Docker reports the name as given.
    assert.equal(reportedImageMatches('localhost/codeact-sandbox/python:bookworm', 'codeact-sandbox/python:bookworm', 'docker'), false);
  });
});

describe('label filters checked again (unit)', () => {
  it('keeps only what carries every filter, as Docker does and Podman\'s volume and image lists do not', () => {
    const labels = { 'dev.codeact-sandbox.managed': '1', 'dev.codeact-sandbox.owner-kind': 'cli', 'dev.codeact-sandbox.session': 'abc' };
    assert.equal(hasAllLabels(labels, ['dev.codeact-sandbox.managed', 'dev.codeact-sandbox.owner-kind=cli']), true);
    assert.equal(hasAllLabels(labels, ['dev.codeact-sandbox.managed', 'dev.codeact-sandbox.session=other']), false);
    assert.equal(hasAllLabels(labels, ['dev.codeact-sandbox.pool']), false);
    // A value with "=" in it is compared whole.
    assert.equal(hasAllLabels({ k: 'a=b' }, ['k=a=b']), true);
    assert.equal(hasAllLabels(undefined, ['dev.codeact-sandbox.managed']), false);
    assert.equal(hasAllLabels(null, []), true);
  });
});
