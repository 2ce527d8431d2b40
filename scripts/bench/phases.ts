/**
 * Where a warm call's time goes, measured on the runner channel itself (no pipeline): host and
 * container share the kernel's real-time clock, so the program's own time stamps place its start
 * and end on the host's time line.
 */
import type { DockerSandbox } from '../../src/docker/sandbox/dockerSandbox';
import { stat, type Stat } from './stats';

const STAMPED = [
  'import sys, time',
  't1 = time.time()',
  'print(1)',
  't2 = time.time()',
  'sys.stdout.write("@%r %r\\n" % (t1, t2))',
  'sys.stdout.flush()',
].join('\n');

const now = () => performance.timeOrigin + performance.now();

/** Each run's directory is new, also when one sandbox is measured more than once. */
let runNumber = 900_000;

export interface Phases {
  /** Request written by the host until the program's first statement: the channel, program.py, checks, fork, becoming the program. */
  toProgram: Stat;
  /** The program's own statements. */
  program: Stat;
  /** Its flushed output until the host has it: runner read, frame, attach stream, Node. */
  outputBack: Stat;
  /** Its output on the host until the exit frame is: the child's exit, the runner's reaping, the exit frame's trip. */
  exitAndReply: Stat;
  /** The whole round trip on the channel. */
  channelTotal: Stat;
}

/**
 * `session`: each call a session call, run on the state the last one kept, in the process the
 * state's holder forked ahead once the last call was over (asked here as the provider asks at a
 * call's end, and waited for before the gap).
 */
export async function warmPhases(sandbox: DockerSandbox, n: number, gapMs: number, options: { session?: boolean } = {}): Promise<Phases> {
  const rows: Record<keyof Phases, number[]> = { toProgram: [], program: [], outputBack: [], exitAndReply: [], channelTotal: [] };
  for (let i = 0; i < n + 2; i++) {
    await new Promise((r) => setTimeout(r, gapMs));
    const number = runNumber++;
    const runner = sandbox.runner;
    if (!runner) throw new Error('no runner channel');
    let text = '';
    let outAt = 0;
    const t0 = now();
    const outcome = await runner.run(
      900_000_000 + number,
      {
        dir: `/sandbox/runs/${number}-bec000`,
        code: Buffer.from(STAMPED),
        maxOutputBytes: 1 << 20,
        orphanGraceMs: 200,
        ...(options.session ? { state: { reset: false } } : {}),
      },
      {
        onStdout: (c) => {
          text += c.toString('utf8');
          if (text.includes('@')) outAt ||= now();
        },
        onStderr: () => {},
      },
      new AbortController().signal,
      5000,
    );
    const t3 = now();
    if (outcome.kind !== 'exit' || outcome.exitCode !== 0) throw new Error(`phase run: ${JSON.stringify(outcome)}`);
    if (options.session) {
      sandbox.forkNextAhead();
      await sandbox.between(async () => {});
    }
    const m = /^1\n@([0-9.]+) ([0-9.]+)\n$/.exec(text);
    if (!m) throw new Error(`phase run printed ${JSON.stringify(text)}`);
    if (i < 2) continue;
    const t1 = Number(m[1]) * 1000;
    const t2 = Number(m[2]) * 1000;
    rows.toProgram.push(t1 - t0);
    rows.program.push(t2 - t1);
    rows.outputBack.push(outAt - t2);
    rows.exitAndReply.push(t3 - outAt);
    rows.channelTotal.push(t3 - t0);
  }
  return Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, stat(v)])) as unknown as Phases;
}

/**
 * Inside the container, in an interpreter with the preload modules imported: what os.fork() itself
 * costs, and a fork whose child exits at once, waited for (the floor of a fresh process per call).
 */
export const FORK_SCRIPT = (modules: readonly string[], n: number) => `
import json, os, time
for m in ${JSON.stringify(modules)}:
    try:
        __import__(m)
    except ImportError:
        pass
fork, whole = [], []
for i in range(${n} + 2):
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    dt = (time.perf_counter() - t) * 1000
    os.waitpid(pid, 0)
    if i >= 2:
        fork.append(dt)
        whole.append((time.perf_counter() - t) * 1000)
print(json.dumps({"fork": fork, "forkAndExit": whole}))
`;

/** The phase of `phases` that takes the most of a warm call (for a target the bench says is not reached). */
export function heaviestPhase(phases: Phases): string {
  const parts = Object.entries(phases).filter(([k]) => k !== 'channelTotal') as [string, Stat][];
  const [name, s] = parts.sort((a, b) => b[1].median - a[1].median)[0]!;
  return `${name} (${s.median.toFixed(1)} ms of ${phases.channelTotal.median.toFixed(1)} on the channel)`;
}
