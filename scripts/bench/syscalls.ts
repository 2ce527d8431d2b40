/**
 * Syscalls per warm call, counted by strace from the host (runc only: under gVisor the sandbox's
 * kernel answers them and the host sees none). Like page faults, a count that does not depend on
 * the machine, while each syscall's price does: tens of µs under gVisor in a virtual machine,
 * under a µs on runc. Two counts for each process:
 * - on the way: the runner (PID 1) from reading a run request to writing its exit frame; the
 *   program's process from the read that hands it its run's directory to its exit_group;
 * - in all: everything they did over the calls, divided by the calls (the runner's fork of the
 *   next child and its rehearsal in the idle time, the child's waiting and its end).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export interface CallSyscalls {
  calls: number;
  runner: { onTheWay: number; all: number };
  program: { onTheWay: number; all: number };
}

/** A syscall's first line in `strace -f` output, its pid taken off (a resumed one starts with `<...`). */
const SYSCALL = /^[a-z_][a-z0-9_]*\(/;

/** Counts of one trace of `calls` calls of the runner `runnerPid` (pure: unit-tested). */
export function countSyscalls(trace: string, runnerPid: number, calls: number): CallSyscalls {
  const byPid = new Map<number, string[]>();
  for (const line of trace.split('\n')) {
    const pid = Number(/^(\d+)\s/.exec(line)?.[1]);
    if (!pid) continue;
    if (!byPid.has(pid)) byPid.set(pid, []);
    byPid.get(pid)!.push(line.slice(line.indexOf(' ')).trim());
  }
  const isCall = (l: string) => SYSCALL.test(l);
  const runner = byPid.get(runnerPid) ?? [];
  const runnerWay: number[] = [];
  let n = -1;
  for (const l of runner) {
    if (/^read\(\d+, "CXr/.test(l)) n = 0;
    if (n >= 0 && isCall(l)) n++;
    if (n >= 0 && /^write\(\d+, "CXX/.test(l)) {
      runnerWay.push(n);
      n = -1;
    }
  }
  let programsAll = 0;
  const programWay: number[] = [];
  for (const [pid, lines] of byPid) {
    if (pid === runnerPid) continue;
    programsAll += lines.filter(isCall).length;
    const at = lines.findIndex((l) => /read(\(\d+,| resumed>)\s*"\/sandbox\/runs\//.test(l));
    const end = lines.findIndex((l) => l.startsWith('exit_group('));
    if (at >= 0 && end > at) programWay.push(lines.slice(at + 1, end + 1).filter(isCall).length);
  }
  const median = (v: number[]) => (v.length ? [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]! : NaN);
  const per = (total: number) => Math.round((total / calls) * 10) / 10;
  return {
    calls,
    runner: { onTheWay: median(runnerWay), all: per(runner.filter(isCall).length) },
    // A series of n calls traces n + 1 children: the first from its wake-up only, the last up to
    // its wait, which together make one whole child.
    program: { onTheWay: median(programWay), all: per(programsAll) },
  };
}

/** Syscalls per call of `call`, made `n` times in the container whose PID 1 is `runnerPid` on the host; a reason when strace cannot count. */
export async function syscallsPerCall(runnerPid: number, n: number, call: () => Promise<void>): Promise<CallSyscalls | string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'codeact-strace-'));
  const file = path.join(dir, 'trace');
  try {
    const strace = spawn('strace', ['-f', '-o', file, '-p', String(runnerPid)], { stdio: ['ignore', 'ignore', 'pipe'] });
    const attached = await new Promise<string | undefined>((resolve) => {
      let err = '';
      strace.on('error', (e) => resolve(`strace: ${e.message}`));
      strace.on('exit', () => resolve(`strace ended: ${err.trim()}`));
      strace.stderr.on('data', (c: Buffer) => {
        err += c.toString();
        if (err.includes('attached')) resolve(undefined);
      });
    });
    if (attached) return attached;
    const ended = new Promise((r) => strace.once('exit', r));
    try {
      for (let i = 0; i < n; i++) await call();
    } finally {
      strace.kill('SIGINT');
      await ended;
    }
    return countSyscalls(await readFile(file, 'utf8'), runnerPid, n);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function describeSyscalls(s: CallSyscalls): string {
  return `the runner ${s.runner.onTheWay} on the way from the request to the exit frame (${s.runner.all} in all), the program ${s.program.onTheWay} from its wake-up to its exit (${s.program.all} in all)`;
}
