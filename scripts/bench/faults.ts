/**
 * Page faults per warm call, by process: a count that does not depend on how fast the machine is
 * (a first touch of a page costs a few hundred ns on bare metal and tens of µs in some virtual
 * machines, but the number of touches is the same). Read from /proc inside the sandbox before and
 * after a series of calls:
 * - the runner (PID 1), its own faults;
 * - the programs: the faults of the children the sandbox's long-lived processes reaped (each
 *   call's child, from its fork to its exit, copy-on-write included);
 * - the state holder (session mode): the other process that outlives the calls, its own faults.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { SANDBOX_GID, SANDBOX_UID } from '../../src/docker/container/guest';

const execFileP = promisify(execFile);

/** Prints, for every process of the sandbox, its pid and minflt, majflt, cminflt, cmajflt. */
const SNAPSHOT = `
import json, os
out = {}
me = os.getpid()
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) in (me, os.getppid()):
        continue
    try:
        with open("/proc/%s/stat" % name) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        continue
    # After the command's ")": state is fields[0], so minflt (10th of stat) is fields[7].
    out[name] = [int(fields[7]), int(fields[9]), int(fields[8]), int(fields[10])]
print(json.dumps(out))
`;

type Snapshot = Record<string, [number, number, number, number]>;

async function snapshot(container: string): Promise<Snapshot> {
  const { stdout } = await execFileP('docker', ['exec', '-u', `${SANDBOX_UID}:${SANDBOX_GID}`, container, 'python3', '-c', SNAPSHOT]);
  return JSON.parse(stdout.trim()) as Snapshot;
}

export interface Faults {
  minor: number;
  major: number;
}

export interface CallFaults {
  calls: number;
  runner: Faults;
  programs: Faults;
  /** Absent where no process but the runner outlives the calls (fresh mode). */
  holder?: Faults;
}

/** Faults per call of `call`, made `n` times in `container`. */
export async function faultsPerCall(container: string, n: number, call: () => Promise<void>): Promise<CallFaults> {
  const before = await snapshot(container);
  for (let i = 0; i < n; i++) await call();
  const after = await snapshot(container);
  const per = (d: number) => Math.round((d / n) * 10) / 10;
  const delta = (pid: string, at: 0 | 2): Faults => ({ minor: per(after[pid]![at] - before[pid]![at]), major: per(after[pid]![at + 1]! - before[pid]![at + 1]!) });
  const lasting = Object.keys(before).filter((pid) => pid in after);
  const programs = lasting.map((pid) => delta(pid, 2)).reduce((a, b) => ({ minor: a.minor + b.minor, major: a.major + b.major }), { minor: 0, major: 0 });
  const holders = lasting.filter((pid) => pid !== '1');
  return {
    calls: n,
    runner: delta('1', 0),
    programs: { minor: Math.round(programs.minor * 10) / 10, major: Math.round(programs.major * 10) / 10 },
    ...(holders.length === 1 ? { holder: delta(holders[0]!, 0) } : {}),
  };
}

export function describeFaults(f: CallFaults): string {
  const one = (x: Faults) => `${x.minor} minor, ${x.major} major`;
  return `runner ${one(f.runner)}; program ${one(f.programs)}${f.holder ? `; state holder ${one(f.holder)}` : ''} (per call, ${f.calls} calls)`;
}

/**
 * What the first touch of a page costs in the sandbox, µs: 64 MB of fresh memory written a byte a
 * page, less the same loop over the pages once touched. It tells the machine the figures were
 * taken on (a few tenths of a µs on bare metal; far more in some virtual machines).
 */
const PAGE_TOUCH = `
import json, mmap, time
size = 64 << 20
page = mmap.PAGESIZE
m = mmap.mmap(-1, size)
def touch():
    t = time.perf_counter()
    for i in range(0, size, page):
        m[i] = 1
    return time.perf_counter() - t
first = touch()
again = min(touch() for _ in range(3))
print(json.dumps((first - again) / (size // page) * 1e6))
`;

export async function pageTouchMicros(container: string): Promise<number> {
  const { stdout } = await execFileP('docker', ['exec', '-u', `${SANDBOX_UID}:${SANDBOX_GID}`, container, 'python3', '-c', PAGE_TOUCH]);
  return Number(stdout.trim());
}
