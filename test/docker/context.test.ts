import * as assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ToolError } from '../../src/core/errors';
import { createDockerClient, dockerCliEnv, resolveEngine, type EngineTarget } from '../../src/docker/engine/connection';
import type { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { IMAGE, SENTENCES, bundleCli, execFileP, run, spawnCli, uniqueSessionKey, useDocker } from './helpers';

/** The engine every other test reaches by default; the contexts below point at it by another route. */
const ENGINE_SOCKET = '/var/run/docker.sock';

describe('Docker contexts (integration)', function () {
  const sandboxes = useDocker();
  const name = `codeact-itest-${process.pid}-${randomBytes(3).toString('hex')}`;
  const dangling = `${name}-nowhere`;
  let dir: string;
  let configDir: string;
  let cli: string;

  /** An environment that knows nothing of the machine's own docker CLI configuration. */
  function isolatedEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: dir, DOCKER_CONFIG: configDir, ...extra };
    for (const k of ['DOCKER_HOST', 'DOCKER_CONTEXT', 'DOCKER_TLS_VERIFY', 'DOCKER_CERT_PATH']) if (!(k in extra)) delete env[k];
    return env;
  }

  /** The real docker CLI, on the temporary configuration only. */
  const dockerCli = (...args: string[]) => execFileP('docker', args, { env: isolatedEnv() });

  before(async function () {
    this.timeout(60_000);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-context-test-'));
    configDir = path.join(dir, 'docker-config');
    await dockerCli('context', 'create', name, '--docker', `host=unix://${ENGINE_SOCKET}`);
    await dockerCli('context', 'create', dangling, '--docker', `host=unix://${dir}/nothing-here.sock`);
    cli = await bundleCli(dir);
  });

  after(async function () {
    this.timeout(60_000);
    if (!dir) return;
    await dockerCli('context', 'rm', '--force', name, dangling).catch(() => undefined);
    const left = (await dockerCli('context', 'ls', '--format', '{{.Name}}')).stdout.split('\n').filter(Boolean);
    fs.rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(left, ['default'], 'contexts left behind');
  });

  /** A provider on `target`, disposed by useDocker's after hook (before this suite's own). */
  function provider(target: EngineTarget): DockerSandboxProvider {
    return sandboxes.makeProvider({ options: { docker: createDockerClient(target) } });
  }

  // The platform default points at a socket that does not exist: only the context reaches the engine.
  const nowhere = () => ({ platformDefault: `unix://${dir}/no-default-engine.sock` });

  it('runs a program through a context made by `docker context create`, the only way to the engine', async function () {
    const target = resolveEngine({}, isolatedEnv({ DOCKER_CONTEXT: name }), process.platform, nowhere());
    assert.deepEqual([target.source, target.reason, target.socketPath], ['context', `context ${name} (DOCKER_CONTEXT)`, ENGINE_SOCKET]);
    const report = await run(provider(target), uniqueSessionKey('context'), 'print(6 * 7)\n');
    assert.equal(report.text, 'stdout:\n42');

    // The same store without the context: nothing answers, so the run above went through it.
    const without = resolveEngine({}, isolatedEnv({ DOCKER_CONTEXT: 'default' }), process.platform, nowhere());
    assert.equal(without.reason, 'platform default (context default, DOCKER_CONTEXT)');
    await assert.rejects(run(provider(without), uniqueSessionKey('no-context'), 'print(1)\n'), (e: unknown) => {
      assert.ok(e instanceof ToolError);
      assert.equal(e.modelMessage, SENTENCES.unreachable);
      return true;
    });
  });

  it('follows `docker context use`, and hands the docker CLI the same context', async function () {
    await dockerCli('context', 'use', name);
    try {
      const target = resolveEngine({}, isolatedEnv(), process.platform, nowhere());
      assert.deepEqual([target.reason, target.socketPath], [`context ${name} (the docker CLI's current context)`, ENGINE_SOCKET]);
      await createDockerClient(target).ping();
      // The docker CLI (as the Dev Containers build runs it) reaches the engine through the context even with DOCKER_HOST pointing nowhere.
      const env = dockerCliEnv(target, isolatedEnv({ DOCKER_HOST: 'unix:///nonexistent.sock' }));
      assert.deepEqual([env.DOCKER_HOST, env.DOCKER_CONTEXT, env.DOCKER_CONFIG], [undefined, name, configDir]);
      const { stdout } = await execFileP('docker', ['version', '--format', '{{.Server.Os}}'], { env });
      assert.equal(stdout, 'linux\n');
    } finally {
      await dockerCli('context', 'use', 'default');
    }
  });

  it('the CLI: --context wins over a DOCKER_HOST that points at nothing, and the log says why', async function () {
    const file = path.join(dir, 'p.py');
    fs.writeFileSync(file, 'print(6 * 7)\n');
    const r = await spawnCli(cli, ['run', '--image', IMAGE, '--context', name, '--verbose', file], {
      cwd: dir,
      env: isolatedEnv({ DOCKER_HOST: 'unix:///nonexistent.sock' }),
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'stdout:\n42\n');
    assert.ok(r.stderr.includes(`; engine local Docker engine at unix://${ENGINE_SOCKET} (from context ${name} (--context))\n`), r.stderr);
  });

  it('the CLI: a context that points at nothing gets one sentence naming it and its endpoint', async function () {
    const file = path.join(dir, 'q.py');
    fs.writeFileSync(file, 'print(1)\n');
    const r = await spawnCli(cli, ['run', '--image', IMAGE, file], { cwd: dir, env: isolatedEnv({ DOCKER_CONTEXT: dangling }) });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      `The Docker context "${dangling}" points at unix://${dir}/nothing-here.sock, where no Docker engine answers, so the program was not run; ask the user to start that engine or to switch to a working context (docker context use NAME), then try again.\n`,
    );
  });

  it('the CLI: refuses a context that does not exist, and --context with --docker-host', async function () {
    const file = path.join(dir, 'r.py');
    fs.writeFileSync(file, 'print(1)\n');
    const missing = await spawnCli(cli, ['run', '--image', IMAGE, '--context', 'no-such-context', file], { cwd: dir, env: isolatedEnv() });
    assert.equal(missing.code, 2);
    assert.equal(
      missing.stderr,
      'The Docker context "no-such-context" (chosen by --context) does not exist, so the program was not run. Ask the user to choose a context that `docker context ls` lists, or to create this one.\n',
    );
    const both = await spawnCli(cli, ['run', '--context', name, '--docker-host', `unix://${ENGINE_SOCKET}`, file], { cwd: dir, env: isolatedEnv() });
    assert.equal(both.code, 2);
    assert.ok(both.stderr.startsWith('codeact-sandbox: --docker-host and --context cannot be used together\n\nusage:'), both.stderr);
  });
});
