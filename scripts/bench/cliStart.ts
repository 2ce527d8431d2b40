/**
 * How fast the command line starts and runs, against Node itself in the same run: `node -e 0`, then
 * `node dist/cli.js --help` (the options only: the commands' bundle is not read). Times are
 * medians of interleaved runs; beside them, each process's minor page faults, a count that does
 * not depend on how fast the machine is.
 */
import { execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type Dockerode from 'dockerode';
import { dismissKeeper, keeperAddress } from '../../src/cli/keeperLink';
import { parse } from '../../src/cli/options';
import { makersDir, makersEnded } from '../../src/cli/spareMaker';
import { silentLogger } from '../../src/core/logger';
import { sessionDigest } from '../../src/core/session';
import { LABEL } from '../../src/docker/container/labels';
import { WORK_ROOT } from '../../src/docker/container/guest';
import { lockHolderExec } from '../../src/docker/container/lock';
import { engineIdentity } from '../../src/docker/engine/identity';
import { sharedSandboxName } from '../../src/docker/container';
import { removeQuietly } from '../../src/docker/container/spec';
import { processIsAlive } from '../../src/docker/pool/cleanup';
import { stat, type Stat } from './stats';

const execFileP = promisify(execFile);

/** Preloaded with --require: says the process's own minor faults as it exits. */
const FAULTS = "process.on('exit', () => require('fs').writeSync(2, `\\nminflt=${process.resourceUsage().minorPageFault}\\n`));\n";

export interface CliStartBench {
  results: { 'cli.nodeStart': Stat; 'cli.help': Stat };
  /** Minor page faults of one process, median. */
  faults: { nodeStart: number; help: number };
}

export async function benchCliStart(n: number): Promise<CliStartBench> {
  const preload = path.join(os.tmpdir(), `codeact-bench-faults-${process.pid}.cjs`);
  fs.writeFileSync(preload, FAULTS);
  const cases = { nodeStart: ['-e', '0'], help: [path.resolve('dist/cli.js'), '--help'] };
  const ms: Record<keyof typeof cases, number[]> = { nodeStart: [], help: [] };
  const faults: Record<keyof typeof cases, number[]> = { nodeStart: [], help: [] };
  try {
    for (let i = 0; i < n + 2; i++) {
      for (const name of Object.keys(cases) as (keyof typeof cases)[]) {
        const t = process.hrtime.bigint();
        const { stderr } = await execFileP(process.execPath, ['--require', preload, ...cases[name]]);
        const took = Number(process.hrtime.bigint() - t) / 1e6;
        if (i < 2) continue; // warm-up: the files are in the page cache from here on
        ms[name].push(took);
        faults[name].push(Number(/minflt=(\d+)/.exec(stderr)?.[1]));
      }
    }
  } finally {
    fs.rmSync(preload, { force: true });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return {
    results: { 'cli.nodeStart': stat(ms.nodeStart), 'cli.help': stat(ms.help) },
    faults: { nodeStart: median(faults.nodeStart), help: median(faults.help) },
  };
}

export interface CliRunBench {
  results: {
    /** Under the engine's default runtime choice (gVisor where the engine has runsc), and under runc. */
    'cli.run.warmSession': Stat;
    'cli.run.warmSession.runc': Stat;
    /** The same run in its own process (--keep-seconds 0): what the session's keeper saves. */
    'cli.run.warmSession.ownProcess': Stat;
    'cli.run.newSession': Stat;
    'cli.run.newSession.afterResult': Stat;
  };
  /** Minor page faults of the CLI process of a warm run on a kept session, median. */
  faults: { warmSession: number };
  /** Where a warm run on a kept session in its own process (default runtime) goes, each part measured alone, medians. */
  phases: CliRunPhases;
}

export interface CliRunPhases {
  /** `node -e 0`, from the CLI-start bench. */
  nodeStart: number;
  /** Importing the commands' bundle (cli-commands.mjs and the chunks a run reads), timed inside a new Node process. */
  loadCommands: number;
  /** On a new engine connection, as a new process has: the inspect that finds the session's sandbox, and the ping. */
  findSandbox: number;
  /**
   * The cross-process lock: an exec of its holder in the sandbox until it says it holds the lock.
   * A run asks for it as it starts (src/docker/container/lockAhead.ts): it overlaps loadCommands.
   */
  lockExec: number;
  /** What is left past the longer of loading and the lock: attaching to the runner, the call, printing, exiting. */
  rest: number;
}

/** The phase of a CLI warm run that takes the most, for the bench's sentence on an unmet target. */
export function heaviestCliPhase(p: CliRunPhases, whole: number): string {
  const names: Record<keyof CliRunPhases, string> = {
    nodeStart: 'starting Node',
    loadCommands: 'loading the commands',
    findSandbox: 'finding the sandbox',
    lockExec: "the lock's exec in the sandbox",
    rest: 'the call and the exit',
  };
  const [key, ms] = (Object.entries(p) as [keyof CliRunPhases, number][]).sort((a, b) => b[1] - a[1])[0]!;
  return `${names[key]} (${ms.toFixed(0)} ms of ${whole.toFixed(0)})`;
}

/**
 * The command line's `run` of print(1): on a session it keeps (warm), and in a new session each
 * time (the spare made for the next one by a process of its own), where beside the whole run the
 * time from its result on standard output to its exit is taken: what a caller waits for after it
 * has its answer. `cli` is a bundle stamped `version`, so what it leaves is found and removed.
 */
export async function benchCliRun(
  n: number,
  cli: string,
  image: string,
  version: string,
  docker: Dockerode,
  /** A client with a connection of its own, as a new CLI process has. */
  newClient: () => Dockerode,
  nodeStart: number,
): Promise<CliRunBench> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-bench-cli-'));
  const preload = path.join(dir, 'faults.cjs');
  fs.writeFileSync(preload, FAULTS);
  const program = path.join(dir, 'print1.py');
  fs.writeFileSync(program, 'print(1)\n');
  const kept = `bench-kept-${process.pid}`;
  const warm: number[] = [];
  const warmRunc: number[] = [];
  const own: number[] = [];
  const faults: number[] = [];
  const load: number[] = [];
  const find: number[] = [];
  const lock: number[] = [];
  // The sandbox of the session run in its own process (its lock is free between runs; the others'
  // keepers hold theirs), by the CLI's session key for --session K (src/cli/options.ts).
  const name = sharedSandboxName('cli', sessionDigest(`cli:${kept}-own`));
  const sessions = [kept, `${kept}-runc`];
  const fresh: number[] = [];
  const afterResult: number[] = [];
  try {
    for (let i = 0; i < n + 2; i++) {
      const r = await timedRun(['--require', preload, cli, 'run', '--image', image, '--session', kept, program]);
      await makersEnded(makersDir(), processIsAlive);
      const runc = await timedRun([cli, 'run', '--image', image, '--runtime', 'runc', '--session', `${kept}-runc`, program]);
      await makersEnded(makersDir(), processIsAlive);
      const ownRun = await timedRun([cli, 'run', '--image', image, '--keep-seconds', '0', '--session', `${kept}-own`, program]);
      await makersEnded(makersDir(), processIsAlive);
      if (i < 2) continue; // the first creates the session; both leave the files in the page cache
      warm.push(r.ms);
      warmRunc.push(runc.ms);
      own.push(ownRun.ms);
      faults.push(Number(/minflt=(\d+)/.exec(r.stderr)?.[1]));
      // Its parts, each alone, between the runs (the kept sandbox idle, as a run finds it).
      load.push(await loadTime(path.join(path.dirname(cli), 'cli-commands.mjs')));
      find.push(await findTime(newClient(), name));
      lock.push(await lockTime(docker, name));
    }
    const FRESH_N = Math.max(3, Math.round(n / 6));
    for (let i = 0; i < FRESH_N + 1; i++) {
      sessions.push(`bench-new-${process.pid}-${i}`);
      const r = await timedRun([cli, 'run', '--image', image, '--session', sessions.at(-1)!, program]);
      // The next run takes the spare this one's maker makes: as a user's next new session would.
      await makersEnded(makersDir(), processIsAlive);
      if (i === 0) continue;
      fresh.push(r.ms);
      afterResult.push(r.ms - r.resultMs);
    }
  } finally {
    // Their keepers first: each holds its sandbox, which would otherwise outlive the removal by a minute.
    for (const session of sessions) await dismissKeeper(keeperAddress(session, parse(['run']))!);
    const label = [`${LABEL.version}=${version}`, `${LABEL.ownerKind}=cli`];
    for (const c of await docker.listContainers({ all: true, filters: { label } })) {
      await removeQuietly(docker, c.Id, c.Mounts?.find((m) => m.Destination === WORK_ROOT)?.Name, silentLogger);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const parts = { nodeStart, loadCommands: median(load), findSandbox: median(find), lockExec: median(lock) };
  // The lock's exec runs while the commands load: only the longer of the two is on the way.
  const onTheWay = nodeStart + Math.max(parts.loadCommands, parts.lockExec) + parts.findSandbox;
  const phases: CliRunPhases = { ...parts, rest: Math.max(0, median(own) - onTheWay) };
  return {
    results: {
      'cli.run.warmSession': stat(warm),
      'cli.run.warmSession.runc': stat(warmRunc),
      'cli.run.warmSession.ownProcess': stat(own),
      'cli.run.newSession': stat(fresh),
      'cli.run.newSession.afterResult': stat(afterResult),
    },
    faults: { warmSession: median(faults) },
    phases,
  };
}

/** Milliseconds a new Node process takes to import `bundle`, timed by that process. */
async function loadTime(bundle: string): Promise<number> {
  const code = 'const t = performance.now(); await import(process.env.BUNDLE); process.stdout.write(String(performance.now() - t));';
  const { stdout } = await execFileP(process.execPath, ['--input-type=module', '-e', code], { env: { ...process.env, BUNDLE: bundle } });
  return Number(stdout);
}

/** What a warm run asks before the lock, on a connection of its own: the inspect by name and the ping. */
async function findTime(client: Dockerode, name: string): Promise<number> {
  const t = process.hrtime.bigint();
  await client.getContainer(name).inspect();
  await engineIdentity(client);
  return Number(process.hrtime.bigint() - t) / 1e6;
}

/**
 * The lock holder's exec (the one src/docker/container/lock.ts makes) until it says "locked";
 * then its stdin is closed and its end is waited for, so the next run finds the lock free.
 */
async function lockTime(docker: Dockerode, name: string): Promise<number> {
  const t = process.hrtime.bigint();
  const exec = await docker.getContainer(name).exec(lockHolderExec(false));
  const stream = (await exec.start({ hijack: true, stdin: true })) as NodeJS.ReadWriteStream & { destroy(): void };
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    stream.on('data', (c: Buffer) => {
      seen += c.toString('latin1');
      if (seen.includes('locked\n')) resolve();
    });
    stream.on('end', () => reject(new Error(`the lock holder ended: ${JSON.stringify(seen)}`)));
  });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  stream.end();
  stream.destroy();
  for (let i = 0; i < 500 && (await exec.inspect()).Running; i++) await new Promise((r) => setTimeout(r, 10));
  return ms;
}

/** Runs node with `args`; ms to its exit, and to the end of its result (`stdout:\n1\n`) on standard output. */
function timedRun(args: string[]): Promise<{ ms: number; resultMs: number; stderr: string }> {
  const t = process.hrtime.bigint();
  const since = () => Number(process.hrtime.bigint() - t) / 1e6;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let resultMs = NaN;
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
      if (Number.isNaN(resultMs) && stdout.endsWith('\n')) resultMs = since();
    });
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const ms = since();
      if (code !== 0 || !stdout.startsWith('stdout:\n1\n')) reject(new Error(`CLI run: exit ${code}, ${JSON.stringify(stdout + stderr)}`));
      else resolve({ ms, resultMs, stderr });
    });
  });
}
