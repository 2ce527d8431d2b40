/**
 * Probe networks (network/probe.ts) that outlived their maker hold one of the engine's address
 * pools each: cleanup removes them, and leaves a live maker's alone.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { removeOrphanedSandboxes } from '../../src/docker/pool/cleanup';
import { egressLabels } from '../../src/docker/network/proxyContainer';
import { probeLabels } from '../../src/docker/network/probe';
import { TEST_ENGINE, TEST_VERSION, docker, dockerCli, log, owner, useDocker } from './helpers';

/** The network's id, or '' when the engine has none by that exact name. */
const networkId = async (name: string) => (await dockerCli('network', 'ls', '-q', '--filter', `name=^${name}$`)).trim();

describe('probe networks (integration)', function () {
  this.timeout(120_000);
  useDocker();
  before(function () {
    // Podman's sandboxes join their own proxy's namespace: no sandbox network, no probe.
    if (TEST_ENGINE !== 'docker') this.skip();
  });

  it('removes the probe a crashed process left between its create and its remove, and keeps a live process\'s', async function () {
    const base = `codeact-itest-probe-${process.pid}`;
    const maker = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'fixtures/probeMaker.ts'), `${base}-crashed`, TEST_VERSION], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise<void>((resolve) => maker.on('exit', () => resolve()));
    const created = await new Promise<string>((resolve, reject) => {
      let out = '';
      maker.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const m = /^created (\S+)\n/.exec(out);
        if (m) resolve(m[1]!);
      });
      maker.on('exit', () => reject(new Error(`the probe maker exited first: ${out}`)));
    });
    assert.equal(created, `${base}-crashed-probe-${maker.pid}`);
    maker.kill('SIGKILL');
    await exited;
    const crashed = await networkId(created);
    assert.notEqual(crashed, '');
    // Made by this process, which runs: in use.
    const live = `${base}-live-probe-${process.pid}`;
    await docker.createNetwork({ Name: live, Driver: 'bridge', Internal: true, Labels: probeLabels(egressLabels(TEST_VERSION, 'network', 'itest')), Options: { 'com.docker.network.bridge.inhibit_ipv4': 'true' } });
    try {
      await removeOrphanedSandboxes(docker, { ...owner, kind: 'vscode' }, log);
      assert.equal(await networkId(created), '', 'the crashed process\'s probe is removed');
      assert.notEqual(await networkId(live), '', 'the live process\'s probe is kept');
    } finally {
      await docker.getNetwork(live).remove();
    }
  });
});
