import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isToolError } from '../../src/core/errors';
import { sessionDigest } from '../../src/core/session';
import { createDockerClient, resolveEngine } from '../../src/docker/engine/connection';
import { sharedSandboxName } from '../../src/docker/container';
import { LABEL } from '../../src/docker/container/labels';
import { FaultyEngine } from './fixtures/faultyEngine';
import { IMAGE, TEST_LABEL, bundleCli, containersWith, dockerCli, run, spawnCli, uniqueSessionKey, useDocker } from './helpers';

/** The containers of a CLI session: made for it (its label) or a spare it took (named after the session). */
async function sessionSandboxes(session: string): Promise<string[]> {
  const digest = sessionDigest(`cli:${session}`);
  const byLabel = await containersWith(TEST_LABEL, `${LABEL.session}=${digest}`);
  const named = sharedSandboxName('cli', digest);
  const byName = (await dockerCli('ps', '-a', '--no-trunc', '--format', '{{.ID}} {{.Names}}'))
    .split('\n')
    .map((line) => line.split(' '))
    .filter(([, name]) => name === named)
    .map(([id]) => id!);
  return [...new Set([...byLabel, ...byName])].sort();
}

describe('sessions shared by processes (integration)', function () {
  const sandboxes = useDocker();
  let dir: string;
  let cli: string;

  before(async function () {
    this.timeout(60_000);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-shared-'));
    cli = await bundleCli(dir);
  });
  after(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('20 processes running in one --session at once all get their own, correct result', async function () {
    const count = 20;
    // A busy engine (Podman answers one request at a time) makes them wait in line: waiting is not failing.
    this.timeout(600_000);
    const session = `conc${count}-${process.pid}-${Date.now()}`;
    const program = path.join(dir, 'prog.py');
    fs.writeFileSync(program, 'import sys, time\ntime.sleep(1)\nprint("done in", sys.argv[0].split("/")[-2])\n');
    const runs = await Promise.all(
      // CODEACT_DEBUG: a failed run prints the cause behind its sentence, for the assertion's message.
      Array.from({ length: count }, () =>
        spawnCli(cli, ['run', '--image', IMAGE, '--session', session, '--memory', '256', program], { cwd: dir, env: { ...process.env, CODEACT_DEBUG: '1' } }),
      ),
    );
    try {
      const dirs = new Set<string>();
      for (const r of runs) {
        assert.equal(r.code, 0, r.stderr);
        const m = /^stdout:\ndone in (\d{4}-[0-9a-f]{6})\n$/.exec(r.stdout);
        assert.ok(m, r.stdout);
        assert.doesNotMatch(r.stdout + r.stderr, /memory/);
        dirs.add(m[1]!);
      }
      // Each in a fresh directory of its own.
      assert.equal(dirs.size, count);
      // One sandbox served them all (made for the session, or a spare it took: that one keeps the
      // spare's labels and is known by the session's name).
      assert.equal((await sessionSandboxes(session)).length, 1);
    } finally {
      await spawnCli(cli, ['cleanup', '--session', session], { cwd: dir, env: process.env });
    }
  });

  it('six processes each starting a new --session at once, with spares on, all get their result', async function () {
    // Each claims a spare or makes its sandbox while the others make and remove spares of the same pool.
    this.timeout(600_000);
    const sessions = Array.from({ length: 6 }, (_, i) => `new${i}-${process.pid}-${Date.now()}`);
    const program = path.join(dir, 'hello.py');
    fs.writeFileSync(program, 'print("hello")\n');
    const runs = await Promise.all(
      sessions.map((session) =>
        spawnCli(cli, ['run', '--image', IMAGE, '--session', session, '--spares', '1', '--memory', '256', program], { cwd: dir, env: { ...process.env, CODEACT_DEBUG: '1' } }),
      ),
    );
    try {
      assert.deepEqual(
        runs.map((r) => [r.code, r.stdout, r.stderr]),
        sessions.map(() => [0, 'stdout:\nhello\n', '']),
      );
    } finally {
      await Promise.all(sessions.map((session) => spawnCli(cli, ['cleanup', '--session', session], { cwd: dir, env: process.env })));
    }
  });

  it('an engine error while re-attaching fails the call and keeps the session sandbox', async function () {
    const key = uniqueSessionKey('transient');
    const first = sandboxes.makeProvider({ options: { adoptExisting: true } });
    assert.equal((await run(first, key, 'print(1)')).text, 'stdout:\n1');
    const [id] = await containersWith(TEST_LABEL, `${LABEL.session}=${sessionDigest(key)}`);
    await first.detachAll();

    // Every inspect fails: the session's sandbox is looked up by its name, then by its labels.
    const faulty = await FaultyEngine.start({ method: 'GET', path: /\/containers\/[^/]+\/json/, status: 500 });
    try {
      const flaky = sandboxes.makeProvider({ options: { adoptExisting: true, docker: createDockerClient(resolveEngine({ host: `unix://${faulty.socketPath}` })) } });
      await assert.rejects(run(flaky, key, 'print(2)'), (e: unknown) => isToolError(e) && e.code === 'sandbox_failed');
      await flaky.detachAll();
    } finally {
      await faulty.stop();
    }
    // Still there, and the next process re-attaches to it.
    assert.deepEqual(await containersWith(TEST_LABEL, `${LABEL.session}=${sessionDigest(key)}`), [id]);
    const again = sandboxes.makeProvider({ options: { adoptExisting: true } });
    const r = await run(again, key, 'print(3)');
    assert.equal(r.text, 'stdout:\n3');
    assert.equal(r.sandboxId, id);
  });
});
