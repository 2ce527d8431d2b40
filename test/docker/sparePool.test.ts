import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { sessionDigest } from '../../src/core/session';
import { processIsAlive, removeOrphanedSandboxes } from '../../src/docker/pool/cleanup';
import { dismissKeeper, standbyAddress } from '../../src/cli/keeperLink';
import { parse } from '../../src/cli/options';
import { liveMakers, makersDir, makersEnded } from '../../src/cli/spareMaker';
import type { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { LABEL, currentOwner, type Owner } from '../../src/docker/container/labels';
import {
  IMAGE,
  TEST_LABEL,
  TEST_LIMITS,
  TEST_VERSION,
  WAITING_TEST_MS,
  bundleCli,
  containersWith,
  docker,
  exists,
  inspect,
  log,
  run,
  spawnCli,
  testSpec,
  uniqueSessionKey,
  useDocker,
  waitFor,
} from './helpers';

const SPARE = `${LABEL.session}=spare`;

/** The one spare the provider holds, once it has one that is not `not` (spares are made in the background). */
function nextSpare(provider: DockerSandboxProvider, not?: string): Promise<string> {
  return waitFor(() => provider.spareIds.find((id) => id !== not), 'a spare to be made');
}

describe('spare sandboxes (integration)', function () {
  this.timeout(WAITING_TEST_MS);
  const sandboxes = useDocker();

  it("a new session's first call takes the spare, and a replacement is made after the call", async function () {
    const provider = sandboxes.makeProvider({ options: { spareSandboxes: 1 } });
    await provider.fillSpares();
    const [spare] = provider.spareIds;
    assert.ok(spare);
    const made = await inspect(spare);
    assert.equal(made.Config.Labels[LABEL.session], 'spare');
    assert.match(made.Name, /^\/codeact-spare-[0-9a-f]{6}$/);

    const key = uniqueSessionKey('takes-spare');
    const callStarted = Date.now();
    const r = await run(provider, key, 'print("first")');
    assert.equal(r.text, 'stdout:\nfirst');
    // The call ran in the spare: a container created before the call began.
    assert.equal(r.sandboxId, spare);
    assert.ok(Date.parse(made.Created) < callStarted);
    assert.deepEqual([...provider.active.keys()], [key]);

    const replacement = await nextSpare(provider, spare);
    assert.notEqual(replacement, spare);
    assert.equal((await inspect(replacement)).Config.Labels[LABEL.session], 'spare');
    // The taken one carries the session's name (for people reading `docker ps`).
    const renamed = await waitFor(async () => {
      const name = (await inspect(spare)).Name as string;
      return name.startsWith(`/codeact-${sessionDigest(key).slice(0, 12)}-`) ? name : undefined;
    }, 'the taken spare to be renamed');
    assert.match(renamed, /^\/codeact-[0-9a-f]{12}-[0-9a-f]{6}$/);
    // Later calls of the session keep its sandbox; the spare stays a spare.
    assert.equal((await run(provider, key, 'print("second")')).sandboxId, spare);
    assert.deepEqual(provider.spareIds, [replacement]);
  });

  it('a change of the settings drains the pool and refills it for the new ones', async function () {
    let limits = { ...TEST_LIMITS };
    const provider = sandboxes.makeProvider({ spec: () => testSpec({ limits }), options: { spareSandboxes: 1 } });
    await provider.fillSpares();
    const [old] = provider.spareIds;
    assert.ok(old);

    limits = { ...limits, memoryMb: limits.memoryMb + 32 };
    const r = await run(provider, uniqueSessionKey('new-settings'), 'print("new")');
    assert.equal(r.text, 'stdout:\nnew');
    assert.notEqual(r.sandboxId, old, 'a spare of the old settings must not be taken');
    await waitFor(async () => !(await exists(old)), 'the spare of the old settings to be removed');

    const fresh = await nextSpare(provider);
    assert.equal((await inspect(fresh)).HostConfig.Memory, (TEST_LIMITS.memoryMb + 32) * 1024 * 1024);
    assert.equal((await run(provider, uniqueSessionKey('new-settings-2'), 'print(2)')).sandboxId, fresh);
  });

  it('dispose removes the spares and their work areas', async function () {
    const provider = sandboxes.makeProvider({ options: { spareSandboxes: 2 } });
    await provider.fillSpares();
    const spares = provider.spareIds;
    assert.equal(spares.length, 2);
    const volumes = await Promise.all(spares.map(async (id) => (await inspect(id)).Mounts[0].Name as string));
    await provider.dispose();
    for (const id of spares) assert.equal(await exists(id), false);
    for (const v of volumes) assert.equal(await exists(v, 'volume'), false);
  });

  it('spares of a window that is gone are removed like its sandboxes', async function () {
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    await new Promise((resolve) => child.once('exit', resolve));
    const gone: Owner = { kind: 'vscode', host: os.hostname(), pid: child.pid!, version: TEST_VERSION };
    const provider = sandboxes.makeProvider({ owner: gone, options: { spareSandboxes: 1 } });
    await provider.fillSpares();
    const [spare] = provider.spareIds;
    assert.ok(spare);
    const removed = await removeOrphanedSandboxes(docker, currentOwner('vscode', TEST_VERSION), log);
    assert.ok(removed >= 1);
    assert.equal(await exists(spare), false);
  });
});

describe('spare sandboxes shared by CLI processes (integration)', function () {
  useDocker();
  let dir: string;
  let cli: string;

  before(async function () {
    this.timeout(60_000);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-spares-'));
    cli = await bundleCli(dir);
  });
  after(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const cliRun = (args: string[]) => spawnCli(cli, args, { cwd: dir, env: process.env });
  /** Spares no session has taken: a taken one keeps its labels (they cannot change) but not its name. */
  const spares = async () => {
    const ids = await containersWith(TEST_LABEL, SPARE, `${LABEL.ownerKind}=cli`);
    const names = await Promise.all(ids.map(async (id) => (await inspect(id)).Name as string));
    return ids.filter((_, i) => names[i]!.startsWith('/codeact-cli-spare-'));
  };

  it('the next run of a new --session adopts the spare an earlier run left, by its name from then on', async function () {
    this.timeout(240_000);
    const program = path.join(dir, 'runs.py');
    fs.writeFileSync(program, "import os\nprint(len(os.listdir('/sandbox/runs')))\n");
    const a = `spares-a-${process.pid}-${Date.now()}`;
    const b = `spares-b-${process.pid}-${Date.now()}`;
    try {
      const first = await cliRun(['run', '--image', IMAGE, '--session', a, program]);
      assert.equal(first.code, 0, first.stderr);
      // The process made a spare for the next new session before it ended.
      const [spare, ...more] = await spares();
      assert.ok(spare, 'a spare was left');
      assert.deepEqual(more, []);
      assert.match((await inspect(spare)).Name, /^\/codeact-cli-spare-[0-9a-f]{12}-[0-9a-f]{4}$/);

      const second = await cliRun(['run', '--image', IMAGE, '--session', b, program]);
      assert.equal(second.code, 0, second.stderr);
      assert.equal(second.stdout, 'stdout:\n1\n');
      const taken = await inspect(spare);
      assert.equal(taken.Name, `/codeact-cli-${sessionDigest(`cli:${b}`).slice(0, 24)}`);
      const [replacement, ...extra] = await spares();
      assert.ok(replacement && replacement !== spare, 'a replacement spare was made');
      assert.deepEqual(extra, []);

      // The session is found by its name (its labels are the spare's): same container, same files.
      const third = await cliRun(['run', '--image', IMAGE, '--session', b, program]);
      assert.equal(third.code, 0, third.stderr);
      assert.equal(third.stdout, 'stdout:\n2\n');
      assert.deepEqual(await spares(), [replacement]);

      const cleanup = await cliRun(['cleanup', '--session', b]);
      assert.equal(cleanup.stdout, 'removed 1 sandbox\n');
      assert.equal(await exists(spare), false);
      assert.equal(await exists(taken.Mounts[0].Name as string, 'volume'), false);
      assert.equal((await cliRun(['cleanup', '--session', a])).stdout, 'removed 1 sandbox\n');
      // `cleanup` without --session removes every CLI sandbox of the engine by this filter (not run
      // here: it would remove those of other test processes on a shared engine); spares match it.
      assert.deepEqual(await containersWith(`${LABEL.ownerKind}=cli`, TEST_LABEL), [replacement]);
    } finally {
      await cliRun(['cleanup', '--session', a]);
      await cliRun(['cleanup', '--session', b]);
    }
  });

  it('a run ends once its result is printed: the next spare is made by a process of its own', async function () {
    this.timeout(240_000);
    const program = path.join(dir, 'hello.py');
    fs.writeFileSync(program, 'print("hello")\n');
    const session = `spares-exit-${process.pid}-${Date.now()}`;
    const go = path.join(dir, 'go');
    // The maker is held before it does anything until `go` exists: what the run waited for is then plain.
    const env = { ...process.env, NODE_OPTIONS: `--require ${path.join(__dirname, 'fixtures/holdSpareMaker.cjs')}`, CODEACT_TEST_MAKER_GO: go };
    try {
      // A keeper that an earlier test's maker left waiting with its spare would take this run, and
      // start the next maker itself (without this test's hold on it): it goes first, letting the
      // spare go, which this run then takes.
      await dismissKeeper(standbyAddress(parse(['run']), process.env, TEST_VERSION)!);
      const r = await spawnCli(cli, ['run', '--image', IMAGE, '--session', session, '--verbose', program], { cwd: dir, env, leaveMakers: true });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'stdout:\nhello\n');
      const maker = Number(/the next new session's spare is made by process (\d+)\n/.exec(r.stderr)?.[1]);
      // The run and every pipe of it have ended; its maker still runs and has made nothing yet.
      assert.deepEqual(liveMakers(makersDir(), processIsAlive), [maker]);
      assert.deepEqual(await spares(), []);

      // Its note goes as it exits, once the spare is made.
      fs.writeFileSync(go, '');
      await makersEnded(makersDir(), processIsAlive);
      assert.equal((await spares()).length, 1);
    } finally {
      fs.writeFileSync(go, '');
      await cliRun(['cleanup', '--session', session]);
    }
  });

  it('two new sessions starting at once: one takes the spare, the other creates its own', async function () {
    this.timeout(240_000);
    const program = path.join(dir, 'hello.py');
    fs.writeFileSync(program, 'print("hello")\n');
    const seed = `spares-seed-${process.pid}-${Date.now()}`;
    const names = [`spares-x-${process.pid}-${Date.now()}`, `spares-y-${process.pid}-${Date.now()}`];
    try {
      assert.equal((await cliRun(['run', '--image', IMAGE, '--session', seed, program])).code, 0);
      const [spare] = await spares();
      assert.ok(spare);
      const both = await Promise.all(names.map((n) => cliRun(['run', '--image', IMAGE, '--session', n, program])));
      for (const r of both) assert.equal(r.stdout, 'stdout:\nhello\n', r.stderr);
      const ids = await Promise.all(
        names.map(async (n) => (await inspect(`codeact-cli-${sessionDigest(`cli:${n}`).slice(0, 24)}`)).Id as string),
      );
      assert.equal(ids.filter((id) => id === spare).length, 1, 'exactly one session took the spare');
      assert.notEqual(ids[0], ids[1]);
      assert.equal((await spares()).length, 1, 'the pool is back to one spare');
    } finally {
      for (const n of [seed, ...names]) await cliRun(['cleanup', '--session', n]);
    }
  });
});
