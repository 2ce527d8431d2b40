/**
 * Where a busy window's CPU goes: this Node process (the extension host's part: the pipeline, the
 * provider, the runner channels), the engine's daemons (dockerd, containerd and the shims: every
 * engine request, attach stream and exec), and the sandboxes' containers (their cgroups: runners,
 * programs, gVisor's kernel). Read before and after a load; the calls' count turns it into the CPU
 * of one call, and the cores into the most calls a second this machine could serve.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';

export interface CpuSnapshot {
  node: number;
  /** By pid (a shim ends with its container: only what each process present at the end used counts). */
  engine: Map<number, number>;
  /** By container id: the CPU its cgroup has used. */
  sandboxes: Map<string, number>;
}

export interface CpuSpent {
  /** Milliseconds of CPU, each part. */
  node: number;
  engine: number;
  sandboxes: number;
}

const ENGINE = /^(dockerd|containerd|containerd-shim.*|runc|runsc.*|conmon|podman)$/;

let ticksPerSecond: number | undefined;
function tickMs(): number {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  return 1000 / ticksPerSecond;
}

/** The engine's processes' CPU (their own and that of children they reaped), ms, by pid. */
function engineMs(): Map<number, number> {
  const ms = new Map<number, number>();
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (!ENGINE.test(comm)) continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime, stime, cutime, cstime: fields 14-17, here 11-14 (counted from the state, field 3).
      ms.set(Number(pid), (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * tickMs());
    } catch {
      // gone meanwhile
    }
  }
  return ms;
}

/** A container's CPU from its cgroup (v1 cgroupfs, v2 cgroupfs or systemd), ms; undefined where none is found. */
function containerMs(id: string): number | undefined {
  const v1 = [`/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`, `/sys/fs/cgroup/cpu,cpuacct/docker/${id}/cpuacct.usage`];
  for (const file of v1) {
    try {
      return Number(fs.readFileSync(file, 'latin1').trim()) / 1e6;
    } catch {
      // not this layout
    }
  }
  for (const dir of [`/sys/fs/cgroup/docker/${id}`, `/sys/fs/cgroup/system.slice/docker-${id}.scope`]) {
    try {
      const usec = /^usage_usec (\d+)$/m.exec(fs.readFileSync(`${dir}/cpu.stat`, 'latin1'))?.[1];
      if (usec !== undefined) return Number(usec) / 1000;
    } catch {
      // not this layout
    }
  }
  return undefined;
}

export function cpuSnapshot(containerIds: readonly string[]): CpuSnapshot {
  const { user, system } = process.cpuUsage();
  const sandboxes = new Map<string, number>();
  for (const id of containerIds) {
    const ms = containerMs(id);
    if (ms !== undefined) sandboxes.set(id, ms);
  }
  return { node: (user + system) / 1000, engine: engineMs(), sandboxes };
}

/**
 * What each part used from `before` to `after` (a container or process that started meanwhile
 * counts from 0; one that ended meanwhile is not counted: the parts are a floor).
 */
export function cpuSpent(before: CpuSnapshot, after: CpuSnapshot): CpuSpent {
  let sandboxes = 0;
  for (const [id, ms] of after.sandboxes) sandboxes += ms - (before.sandboxes.get(id) ?? 0);
  let engine = 0;
  for (const [pid, ms] of after.engine) engine += ms - (before.engine.get(pid) ?? 0);
  return { node: after.node - before.node, engine, sandboxes };
}

/** One sentence: calls a second against the most this machine's cores could serve at one call's CPU. */
export function describeThroughput(calls: number, wallMs: number, spent: CpuSpent): string {
  const perCall = (spent.node + spent.engine + spent.sandboxes) / calls;
  const cores = os.availableParallelism();
  const rate = calls / (wallMs / 1000);
  const ideal = (cores * 1000) / perCall;
  const part = (ms: number) => (ms / calls).toFixed(1);
  return (
    `${rate.toFixed(0)} calls a second; one call's CPU ${perCall.toFixed(1)} ms (this Node process ${part(spent.node)}, ` +
    `the engine's daemons and shims ${part(spent.engine)}, the sandboxes ${part(spent.sandboxes)}), so ${ideal.toFixed(0)} a second ` +
    `at most on ${cores} cores: ${(rate / ideal).toFixed(2)} of that`
  );
}
