import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { dismissKeeper, keeperAddress, standbyAddress } from '../../src/cli/keeperLink';
import { parse } from '../../src/cli/options';
import { makersDir } from '../../src/cli/spareMaker';
import { sessionDigest } from '../../src/core/session';
import { LABEL } from '../../src/docker/container/labels';
import { IMAGE, TEST_ENGINE, TEST_VERSION, bundleCli, dockerCli, inspect, spawnCli, uniqueSessionKey, useDocker, type CliResult } from './helpers';

/** The keeper that ran a --verbose run, as it says. */
function keeperOf(r: CliResult): number {
  const m = /\[info\] run by the session's keeper, process (\d+)(?:, which waited with a spare sandbox for a new session)?\n/.exec(r.stderr);
  assert.ok(m, r.stderr);
  return Number(m[1]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once nothing is at `file` (the keeper removes its socket as it goes): the folder is watched. */
async function gone(file: string): Promise<void> {
  const dir = path.dirname(file);
  while (fs.existsSync(file)) {
    await new Promise<void>((resolve) => {
      const watcher = fs.watch(dir, () => {
        watcher.close();
        resolve();
      });
      if (!fs.existsSync(file)) {
        watcher.close();
        resolve();
      }
    });
  }
}

describe("a kept session's keeper (integration)", function () {
  useDocker();
  let dir: string;
  let cli: string;

  before(async function () {
    this.timeout(60_000);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-keeper-'));
    cli = await bundleCli(dir);
    fs.writeFileSync(path.join(dir, 'set.py'), 'x = 41\n');
    fs.writeFileSync(path.join(dir, 'get.py'), 'print(x + 1)\n');
    fs.writeFileSync(path.join(dir, 'sleep.py'), 'import time\ntime.sleep(60)\n');
  });
  after(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const runCli = (args: string[], stdin?: string) => spawnCli(cli, args, { cwd: dir, env: process.env, ...(stdin !== undefined ? { stdin } : {}) });
  const socketOf = (session: string, ...engine: string[]) => keeperAddress(session, parse(['run', ...engine]))!;
  /** The pids of the spare makers' notes made or removed from now until `stop`, in order of their first event. */
  const notesMade = () => {
    fs.mkdirSync(makersDir(), { recursive: true });
    const seen: number[] = [];
    const watcher = fs.watch(makersDir(), (_event, name) => {
      const pid = Number(name);
      if (Number.isInteger(pid) && pid > 0 && !seen.includes(pid)) seen.push(pid);
    });
    return { stop: () => (watcher.close(), seen) };
  };

  it('runs every run of the session with the same options, the first included, in one process that keeps its state', async function () {
    this.timeout(120_000);
    const session = uniqueSessionKey('keep');
    const args = ['run', '--image', IMAGE, '--session', session, '--state', 'session', '--verbose'];
    try {
      const first = await runCli([...args, 'set.py']);
      assert.equal(first.code, 0, first.stderr);
      const second = await runCli([...args, 'get.py']);
      assert.equal(second.stdout, 'stdout:\n42\n\nState: kept for the next call.\n');
      const third = await runCli([...args, '-'], 'print(x * 2)\n');
      assert.equal(third.stdout, 'stdout:\n82\n\nState: kept for the next call.\n');
      const keeper = keeperOf(first);
      assert.deepEqual([keeperOf(second), keeperOf(third)], [keeper, keeper]);
      // It outlives the runs, and `cleanup` ends it before it removes the sandbox.
      assert.equal(alive(keeper), true);
      const cleanup = await runCli(['cleanup', '--session', session]);
      assert.equal(cleanup.stdout, 'removed 1 sandbox\n');
      // Its socket went before `cleanup` went on: nothing answers there.
      assert.equal(fs.existsSync(socketOf(session)), false);
    } finally {
      await runCli(['cleanup', '--session', session]);
    }
  });

  it('a run with other options: the keeper goes, letting the lock go first, and a keeper of its own runs it', async function () {
    this.timeout(120_000);
    const session = uniqueSessionKey('keep-other');
    const args = ['run', '--image', IMAGE, '--session', session, '--verbose'];
    try {
      const first = await runCli([...args, '--memory', '256', '-'], 'print(6)\n');
      assert.equal(first.stdout, 'stdout:\n6\n');
      const other = await runCli([...args, '--memory', '300', '-'], 'print(7)\n');
      assert.equal(other.stdout, 'stdout:\n7\n');
      assert.notEqual(keeperOf(other), keeperOf(first));
      // --keep-seconds 0 runs in its own process, after asking the keeper there is to go.
      const own = await runCli([...args, '--memory', '300', '--keep-seconds', '0', '-'], 'print(8)\n');
      assert.equal(own.stdout, 'stdout:\n8\n');
      assert.doesNotMatch(own.stderr, /keeper/);
      assert.equal(fs.existsSync(socketOf(session)), false);
    } finally {
      await runCli(['cleanup', '--session', session]);
    }
  });

  it('goes after --keep-seconds without a run', async function () {
    this.timeout(60_000);
    const session = uniqueSessionKey('keep-idle');
    try {
      // 5 s, not 1: on a busy machine the run's own exit took more than a second once, and the
      // keeper had already gone when it was looked for.
      const r = await runCli(['run', '--image', IMAGE, '--session', session, '--keep-seconds', '5', '--verbose', '-'], 'print(1)\n');
      assert.equal(r.stdout, 'stdout:\n1\n');
      assert.equal(alive(keeperOf(r)), true);
      await gone(socketOf(session));
    } finally {
      await runCli(['cleanup', '--session', session]);
    }
  });

  it("a new session's first run is run by the keeper that waited with a spare: the spare is that session's; a session with a sandbox of its own is not given it; it goes with its spare", async function () {
    this.timeout(240_000);
    const [a, b] = [uniqueSessionKey('wait-a'), uniqueSessionKey('wait-b')];
    const args = (session: string) => ['run', '--image', IMAGE, '--session', session, '--verbose', '-'];
    const waitingAt = standbyAddress(parse(args(a)), process.env, TEST_VERSION)!;
    const makerOf = (r: CliResult) => Number(/\[info\] the next new session's spare is made by process (\d+)\n/.exec(r.stderr)?.[1]);
    const sandboxOf = (session: string) => inspect(`codeact-cli-${sessionDigest(`cli:${session}`).slice(0, 24)}`);
    try {
      // A keeper that an earlier test's maker left waiting would take the first run: it goes first.
      await dismissKeeper(waitingAt);
      const first = await runCli(args(a), 'print(1)\n');
      assert.equal(first.stdout, 'stdout:\n1\n');
      assert.doesNotMatch(first.stderr, /waited with a spare/);
      // The maker made the spare and waits with it (the run's caller waited until it had).
      const waiting = makerOf(first);
      assert.deepEqual([alive(waiting), fs.existsSync(waitingAt)], [true, true]);

      // The next spare's maker is started once this run has answered: its note, seen as it comes.
      const noted = notesMade();
      const second = await runCli(args(b), 'print(2)\n');
      assert.equal(second.stdout, 'stdout:\n2\n');
      assert.match(second.stderr, new RegExp(`\\[info\\] run by the session's keeper, process ${waiting}, which waited with a spare sandbox for a new session\n`));
      // Its sandbox was the spare: named after the session now, with the spare's labels.
      assert.equal((await sandboxOf(b)).Config.Labels[LABEL.session], 'spare');
      // It is that session's keeper, and it started the maker of the next spare, which waits in its place.
      assert.equal(keeperOf(await runCli(args(b), 'print(3)\n')), waiting);
      assert.match(second.stderr, /\[info\] the next new session's spare is made by a process started once this run has answered\n/);
      // Its keeper noted it under its own pid until it had started it.
      const makers = noted.stop();
      const next = makers[1]!;
      assert.deepEqual([makers.length, makers[0]], [2, waiting]);
      assert.notEqual(next, waiting);
      assert.deepEqual([alive(next), fs.existsSync(waitingAt)], [true, true]);

      // A session that has a sandbox and no keeper: the waiting keeper gives it nothing; its own sandbox runs it.
      await dismissKeeper(socketOf(a));
      const back = await runCli(args(a), "import os\nprint(len(os.listdir('/sandbox/runs')))\n");
      assert.equal(back.stdout, 'stdout:\n2\n');
      assert.doesNotMatch(back.stderr, /waited with a spare/);
      assert.notEqual(keeperOf(back), next);
      assert.equal(alive(next), true);

      // Its spare removed under it: it goes (its socket with it).
      const held = (await dockerCli('ps', '-q', '--no-trunc', '--filter', `label=${LABEL.session}=spare`, '--filter', `label=${LABEL.version}=${TEST_VERSION}`)).split('\n').filter(Boolean);
      for (const id of held) if ((await inspect(id)).Name.startsWith('/codeact-cli-spare-')) await dockerCli('rm', '-f', id);
      await gone(waitingAt);
    } finally {
      await dismissKeeper(waitingAt);
      await runCli(['cleanup', '--session', a]);
      await runCli(['cleanup', '--session', b]);
    }
  });

  it("a kept session whose sandbox was removed gets its state rebuilt in the spare a waiting keeper gives it", async function () {
    this.timeout(240_000);
    // Podman: a spare's warm runner is not reached again once its maker let it go (its calls run by
    // `docker exec`, where no state is kept), whichever process takes the spare.
    if (TEST_ENGINE === 'podman') this.skip();
    const session = uniqueSessionKey('wait-state');
    const args = ['run', '--image', IMAGE, '--session', session, '--state', 'session', '--artifacts', path.join(dir, 'runs'), '--verbose'];
    const waitingAt = standbyAddress(parse(args), process.env, TEST_VERSION)!;
    try {
      await dismissKeeper(waitingAt);
      assert.equal((await runCli([...args, 'set.py'])).code, 0);
      // Its keeper gone, and its sandbox: the run's maker waits with a spare.
      await dismissKeeper(socketOf(session));
      await dockerCli('rm', '-f', `codeact-cli-${sessionDigest(`cli:${session}`).slice(0, 24)}`);
      assert.equal(fs.existsSync(waitingAt), true);
      const next = await runCli([...args, 'get.py']);
      assert.match(next.stderr, /which waited with a spare sandbox for a new session\n/);
      assert.equal(
        next.stdout.replace(/in order \(\d+\.\d s\)/, 'in order (<s> s)'),
        "stdout:\n42\n\nState: restored before this call by re-running this chat's 1 kept run in order (<s> s), because its sandbox had been removed. " +
          'Values computed from time, randomness, the network or workspace files that changed since may differ from before; files those runs wrote were written again.\n\nState: kept for the next call.\n',
      );
      // A run that keeps no keeper lets the waiting keeper go, and takes the spare it held.
      const own = uniqueSessionKey('wait-own');
      assert.equal(fs.existsSync(waitingAt), true);
      const r = await runCli(['run', '--image', IMAGE, '--session', own, '--keep-seconds', '0', '-'], 'print(5)\n');
      assert.equal(r.stdout, 'stdout:\n5\n');
      assert.equal((await inspect(`codeact-cli-${sessionDigest(`cli:${own}`).slice(0, 24)}`)).Config.Labels[LABEL.session], 'spare');
      await runCli(['cleanup', '--session', own]);
    } finally {
      await dismissKeeper(waitingAt);
      await runCli(['cleanup', '--session', session]);
    }
  });

  it("a caller's Ctrl-C stops its program in the keeper, as it does in a run of its own; the next run starts a keeper again", async function () {
    this.timeout(120_000);
    const session = uniqueSessionKey('keep-cancel');
    /** A --verbose run of sleep.py, sent `signal` once it says its program started. */
    const interrupted = (extra: string[]) =>
      new Promise<CliResult>((resolve, reject) => {
        const child = spawn(process.execPath, [cli, 'run', '--image', IMAGE, '--session', session, '--verbose', ...extra, 'sleep.py'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        let sent = false;
        child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
        child.stderr.on('data', (c: Buffer) => {
          stderr += c.toString();
          // Once: a second Ctrl-C ends a command at once, without its result.
          if (!sent && stderr.includes('[debug] the program started\n')) sent = child.kill('SIGINT');
        });
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, stdout, stderr, ms: 0 }));
      });
    try {
      const kept = await interrupted([]);
      const own = await interrupted(['--keep-seconds', '0']);
      assert.deepEqual([kept.code, kept.stdout], [0, 'The run was cancelled by the user and the program was stopped.\n']);
      assert.deepEqual([own.code, own.stdout], [kept.code, kept.stdout]);
      keeperOf(kept);
      const after = await runCli(['run', '--image', IMAGE, '--session', session, '-'], 'print(2)\n');
      assert.equal(after.stdout, 'stdout:\n2\n');
    } finally {
      await runCli(['cleanup', '--session', session]);
    }
  });
});
