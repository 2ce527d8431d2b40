/**
 * A remote engine for real: a second dockerd on 127.0.0.1 with TLS and client-certificate
 * verification (test/docker/fixtures/tlsEngine.ts). The test image is copied into it through the
 * API; every run goes through TCP + TLS, nothing through a shared filesystem.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ToolError } from '../../src/core/errors';
import { createDockerClient, resolveEngine, type EngineTarget } from '../../src/docker/engine/connection';
import type { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { SSHD, startSshServer, type SshServer } from './fixtures/sshServer';
import { copyImage, startTlsEngine, type TlsEngine } from './fixtures/tlsEngine';
import { IMAGE, bundleCli, docker, execFileP, run, spawnCli, uniqueSessionKey, useDocker, type CliResult } from './helpers';

const certificateProblem = (url: string) =>
  `The Docker engine at ${url} refused the TLS connection (certificate problem), so the program was not run. Ask the user to check the Docker TLS certificates (DOCKER_CERT_PATH or the certificate folder setting: ca.pem, cert.pem and key.pem must belong to this engine's CA).`;

function runCliIn(dir: string, cli: string, args: string[], env: NodeJS.ProcessEnv, stdin = ''): Promise<CliResult> {
  const clean = { ...process.env };
  for (const k of ['DOCKER_HOST', 'DOCKER_TLS_VERIFY', 'DOCKER_CERT_PATH', 'DOCKER_CONTEXT', 'SSH_AUTH_SOCK']) delete clean[k];
  return spawnCli(cli, args, { cwd: dir, env: { ...clean, ...env }, stdin });
}

describe('remote Docker engines over TLS (integration)', function () {
  this.timeout(180_000);
  const sandboxes = useDocker();
  let engine: TlsEngine;
  let dir: string;
  let cli: string;

  before(async function () {
    this.timeout(300_000);
    // A second engine needs dockerd and root on Linux (as on CI); elsewhere (Docker Desktop)
    // this suite cannot start one and says so instead of failing.
    const dockerd = (process.env.PATH ?? '').split(path.delimiter).some((d) => fs.existsSync(path.join(d, 'dockerd')));
    if (process.platform !== 'linux' || process.getuid?.() !== 0 || !dockerd) {
      process.stderr.write('      (skipped: a second dockerd needs Linux, root and the dockerd binary)\n');
      this.skip();
    }
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-remote-test-'));
    // With the Dev Containers CLI copied next to the bundle the way esbuild.mjs lays it out in
    // dist/, so the bundle's own lookup is what is tested.
    [engine, cli] = await Promise.all([startTlsEngine(), bundleCli(dir)]);
    const pkg = path.dirname(require.resolve('@devcontainers/cli/package.json'));
    const script = path.join(dir, 'devcontainers-cli', 'dist', 'spec-node', 'devContainersSpecCLI.js');
    fs.mkdirSync(path.dirname(script), { recursive: true });
    fs.copyFileSync(path.join(pkg, 'dist', 'spec-node', 'devContainersSpecCLI.js'), script);
    // Only through the API: GET /images/{name}/get from the first engine into POST /images/load.
    await copyImage(docker, engine.docker, IMAGE);
  });

  after(async function () {
    this.timeout(120_000);
    await engine?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  function providerFor(certPath: string | undefined, tlsVerify?: boolean): DockerSandboxProvider {
    return providerOn(resolveEngine({ host: engine.url, ...(certPath ? { certPath } : {}), ...(tlsVerify !== undefined ? { tlsVerify } : {}) }, {}));
  }

  /** A provider on `target`, disposed by useDocker's after hook (before this suite's own). */
  function providerOn(target: EngineTarget): DockerSandboxProvider {
    return sandboxes.makeProvider({ options: { docker: createDockerClient(target) } });
  }

  const runCli = (args: string[], env: NodeJS.ProcessEnv, stdin = '') => runCliIn(dir, cli, args, env, stdin);

  it('runs a program through the TLS endpoint and returns exactly its output', async function () {
    const provider = providerFor(engine.clientCerts);
    const report = await run(provider, uniqueSessionKey('tls-hello'), "print('hello over TLS')\n");
    assert.equal(report.text, 'stdout:\nhello over TLS');
    // The sandbox lives in the second engine, not in the first.
    const [sandbox] = [...provider.active.values()];
    assert.equal((await engine.docker.getContainer(sandbox!.id).inspect()).HostConfig.NetworkMode, 'none');
    await assert.rejects(docker.getContainer(sandbox!.id).inspect(), (e: { statusCode?: number }) => e.statusCode === 404);
  });

  it('refuses a client certificate of another CA, quickly and with a clear sentence', async function () {
    for (const certs of [engine.rogueClientCerts, engine.wrongCaCerts]) {
      const started = Date.now();
      await assert.rejects(run(providerFor(certs), uniqueSessionKey('tls-rogue'), 'print(1)\n'), (e: unknown) => {
        assert.ok(e instanceof ToolError, String(e));
        assert.equal(e.code, 'engine_unreachable');
        assert.equal(e.modelMessage, certificateProblem(engine.url));
        return true;
      });
      assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started} ms`);
    }
  });

  it('reaches the engine through a docker context holding its certificates, and names the context when they are wrong', async function () {
    const configDir = path.join(dir, 'context-config');
    const create = (name: string, certs: string) =>
      execFileP('docker', ['context', 'create', name, '--docker', `host=${engine.url},ca=${certs}/ca.pem,cert=${certs}/cert.pem,key=${certs}/key.pem`], {
        env: { ...process.env, DOCKER_CONFIG: configDir },
      });
    await create('tls-engine', engine.clientCerts);
    await create('tls-rogue', engine.rogueClientCerts);
    const target = resolveEngine({}, { HOME: dir, DOCKER_CONFIG: configDir, DOCKER_CONTEXT: 'tls-engine' });
    assert.deepEqual([target.url, target.tls?.verify, target.certSource], [engine.url, true, 'context']);
    assert.equal((await run(providerOn(target), uniqueSessionKey('tls-context'), "print('hello through a context')\n")).text, 'stdout:\nhello through a context');

    const rogue = resolveEngine({ context: 'tls-rogue' }, { HOME: dir, DOCKER_CONFIG: configDir });
    await assert.rejects(run(providerOn(rogue), uniqueSessionKey('tls-context-rogue'), 'print(1)\n'), (e: unknown) => {
      assert.ok(e instanceof ToolError, String(e));
      assert.equal(
        e.modelMessage,
        `The Docker engine of context "tls-rogue" (${engine.url}) refused the TLS connection (certificate problem), so the program was not run. Ask the user to check the certificates the context was created with (ca.pem, cert.pem and key.pem must belong to this engine's CA; \`docker context update\` replaces them).`,
      );
      return true;
    });
  });

  it('says that TLS is missing when plain HTTP is used against the TLS port', async function () {
    await assert.rejects(run(providerFor(undefined), uniqueSessionKey('tls-plain'), 'print(1)\n'), (e: unknown) => {
      assert.ok(e instanceof ToolError);
      assert.equal(e.code, 'engine_unreachable');
      assert.match(e.modelMessage, new RegExp(`^The Docker engine at ${engine.url.replace(/[.]/g, '\\.')} and this client disagree about TLS`));
      return true;
    });
  });

  it('the CLI honours DOCKER_HOST, DOCKER_CERT_PATH and DOCKER_TLS_VERIFY, and --docker-* over them', async function () {
    const env = { DOCKER_HOST: engine.url, DOCKER_CERT_PATH: engine.clientCerts, DOCKER_TLS_VERIFY: '1' };
    const viaEnv = await runCli(['run', '--image', IMAGE, '-'], env, "print('hello from the CLI over TLS')\n");
    assert.equal(viaEnv.stderr, '');
    assert.equal(viaEnv.stdout, 'stdout:\nhello from the CLI over TLS\n');
    assert.equal(viaEnv.code, 0);

    // The options win over an environment that points elsewhere.
    const viaFlags = await runCli(
      ['run', '--image', IMAGE, '--docker-host', engine.url, '--docker-cert-path', engine.clientCerts, '--docker-tls-verify', '-'],
      { DOCKER_HOST: 'unix:///nonexistent.sock' },
      'print(6 * 7)\n',
    );
    assert.equal(viaFlags.stderr, '');
    assert.equal(viaFlags.stdout, 'stdout:\n42\n');

    const rogue = await runCli(['run', '--image', IMAGE, '-'], { ...env, DOCKER_CERT_PATH: engine.rogueClientCerts }, 'print(1)\n');
    assert.equal(rogue.code, 1);
    assert.equal(rogue.stdout, '');
    assert.equal(rogue.stderr, `${certificateProblem(engine.url)}\n`);
    assert.ok(rogue.ms < 10_000, `took ${rogue.ms} ms`);

    const missing = await runCli(['run', '--image', IMAGE, '-'], { ...env, DOCKER_CERT_PATH: path.join(dir, 'no-such-folder') }, 'print(1)\n');
    assert.equal(missing.code, 2);
    assert.equal(
      missing.stderr,
      `The TLS certificates for the Docker engine at ${engine.url} could not be read, so the program was not run. Ask the user to check the certificate folder (DOCKER_CERT_PATH, default ~/.docker): it must contain ca.pem, cert.pem and key.pem.\n`,
    );
  });

  it('builds a Dev Container image on the TLS engine (the build context crosses the API) and runs from it', async function () {
    const ws = path.join(dir, 'workspace');
    fs.mkdirSync(path.join(ws, '.devcontainer'), { recursive: true });
    fs.writeFileSync(path.join(ws, '.devcontainer', 'devcontainer.json'), '{ "build": { "dockerfile": "Dockerfile" } }\n');
    // COPY only: the second engine has no bridge network for RUN steps.
    fs.writeFileSync(path.join(ws, '.devcontainer', 'Dockerfile'), `FROM ${IMAGE}\nCOPY marker.txt /opt/marker.txt\n`);
    fs.writeFileSync(path.join(ws, '.devcontainer', 'marker.txt'), 'built remotely\n');
    const env = { DOCKER_HOST: engine.url, DOCKER_CERT_PATH: engine.clientCerts, DOCKER_TLS_VERIFY: '1' };
    const r = await runCli(['run', '--backend', 'devcontainer', '--workspace', ws, '-'], env, "print(open('/opt/marker.txt').read().strip())\n");
    assert.equal(r.stderr, '');
    assert.equal(r.stdout, 'stdout:\nbuilt remotely\n');
    const images = await engine.docker.listImages({ filters: { reference: ['codeact-devcontainer/*'] } });
    assert.equal(images.length, 1);
    // Built there, not on the first engine.
    assert.deepEqual(await docker.listImages({ filters: { reference: [images[0]!.RepoTags![0]!] } }), []);
  });
});

describe('remote Docker engines over SSH (integration)', function () {
  this.timeout(120_000);
  const sandboxes = useDocker();
  let server: SshServer;
  let dir: string;
  let cli: string;

  before(async function () {
    if (!fs.existsSync(SSHD) || process.getuid?.() !== 0) {
      // scripts/test.sh installs openssh-server; a machine without it (or not root) cannot host the server.
      process.stderr.write(`      (skipped: needs ${SSHD} and root; scripts/ensure-sshd.sh installs it)\n`);
      this.skip();
    }
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-ssh-test-'));
    [server, cli] = await Promise.all([startSshServer(), bundleCli(dir)]);
  });

  after(async function () {
    await server?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  function providerFor(files: { knownHosts: string; identity: string }): DockerSandboxProvider {
    const target = resolveEngine({ host: server.url }, {});
    const docker = createDockerClient(target, { env: { HOME: server.home }, knownHostsFiles: [files.knownHosts], identityFiles: [files.identity] });
    return sandboxes.makeProvider({ options: { docker } });
  }

  it('runs a program through ssh:// (docker system dial-stdio) and returns exactly its output', async function () {
    const provider = providerFor(server);
    const report = await run(provider, uniqueSessionKey('ssh-hello'), "print('hello over SSH')\n");
    assert.equal(report.text, 'stdout:\nhello over SSH');
  });

  it('refuses an unknown host key and a key the server does not accept, with sentences that say so', async function () {
    const display = `ssh://${server.user}@127.0.0.1:${server.port}`;
    await assert.rejects(run(providerFor({ knownHosts: server.wrongKnownHosts, identity: server.identity }), uniqueSessionKey('ssh-mitm'), 'print(1)\n'), (e: unknown) => {
      assert.ok(e instanceof ToolError, String(e));
      assert.equal(e.code, 'engine_unreachable');
      assert.equal(
        e.modelMessage,
        `The Docker engine at ${display} could not be reached because its SSH host key is not in the user's known_hosts file or does not match it, so the program was not run. Ask the user to connect once with ssh to check and accept the host key.`,
      );
      return true;
    });
    await assert.rejects(run(providerFor({ knownHosts: server.knownHosts, identity: server.strangerIdentity }), uniqueSessionKey('ssh-stranger'), 'print(1)\n'), (e: unknown) => {
      assert.ok(e instanceof ToolError, String(e));
      assert.equal(
        e.modelMessage,
        `The Docker engine at ${display} could not be reached because the SSH server accepted none of the user's keys, so the program was not run. Ask the user to load the right key into the SSH agent (or ~/.ssh) for that host.`,
      );
      return true;
    });
  });

  it('the bundled CLI reaches an ssh:// DOCKER_HOST (ssh2 in pure JS, no native modules)', async function () {
    const r = await runCliIn(dir, cli, ['run', '--image', IMAGE, '-'], { DOCKER_HOST: server.url, HOME: server.home, CODEACT_DEBUG: '1' }, "print('hello from the CLI over SSH')\n");
    assert.equal(r.stderr, '');
    assert.equal(r.stdout, 'stdout:\nhello from the CLI over SSH\n');
    assert.equal(r.code, 0);
  });
});
