/**
 * Session mode in the bench: a call that runs on a kept state against a fresh-mode call and the
 * Jupyter kernel round trip (the peers' state mode), and what a kept state costs in memory after
 * a call that loads a 100 MB DataFrame. `npm run bench` runs it with the rest; on its own:
 * `tsx scripts/bench/session.ts` (BENCH_IMAGE, BENCH_N as for the bench).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type Dockerode from 'dockerode';
import { executeCode } from '../../src/core/executeCode';
import { DEFAULTS, type SandboxLimits } from '../../src/core/limits';
import { silentLogger } from '../../src/core/logger';
import { SessionStates } from '../../src/core/state';
import { createDockerClient } from '../../src/docker/engine/connection';
import { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { SANDBOX_GID, SANDBOX_UID } from '../../src/docker/container/guest';
import { currentOwner } from '../../src/docker/container/labels';
import { STANDALONE, printRatios, printTable, runStandalone, stat, type Stat } from './stats';
import { describeFaults, faultsPerCall, type CallFaults } from './faults';
import { warmPhases, type Phases } from './phases';

const execFileP = promisify(execFile);
const RUN_LIMITS = { timeoutMs: 120_000, outputBudgetBytes: DEFAULTS.outputBudgetBytes, maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024 };
const KEPT = 'State: kept for the next call.';
/** 100 MB of float64 in ten columns. */
const LOAD_DF = 'import numpy as np\nimport pandas as pd\ndf = pd.DataFrame(np.random.default_rng(1).random((1_310_720, 10)))\nprint(round(df.memory_usage().sum() / 2**20))';
const ASK_DF = 'print(round(float(df[0].mean()), 2))';

export interface SessionBench {
  results: Record<string, Stat>;
  /** The container's memory (cgroup memory.current), MB: idle, then after the DataFrame call in each mode. */
  memoryMb: { idleSession: number; keptDataFrame: number; idleFresh: number; freshAfterDataFrame: number };
  ratios: Record<string, number>;
  /** Page faults per session call (print(x + 1)), by process. */
  faults: CallFaults;
  /** Where a session call's time goes on the runner channel, `gapMs` between calls. */
  phases: Phases;
}

async function docker(...args: string[]): Promise<string> {
  const { stdout } = await execFileP('docker', args, { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

async function memoryMb(container: string): Promise<number> {
  const read = 'import sys\nfor p in ("/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory/memory.usage_in_bytes"):\n    try:\n        print(int(open(p).read()))\n        sys.exit(0)\n    except OSError:\n        pass';
  return Number((await docker('exec', container, 'python3', '-c', read)).trim()) / 2 ** 20;
}

const JUPYTER = (n: number) => `
import json, time
from jupyter_client.manager import start_new_kernel
km, kc = start_new_kernel(kernel_name="python3")
def rt(code):
    t = time.perf_counter()
    reply = kc.execute_interactive(code, timeout=60, output_hook=lambda m: None)
    assert reply["content"]["status"] == "ok", reply["content"]
    return (time.perf_counter() - t) * 1000
rt("x = 41")
for _ in range(2):
    rt("print(x + 1)")
print1 = [rt("print(x + 1)") for _ in range(${n})]
kc.stop_channels()
km.shutdown_kernel(now=True)
print(json.dumps(print1))
`;

/** The provider of the state benches: warm runner, default preloads, never removed for idleness. */
export function stateBenchProvider(dockerClient: Dockerode, image: string, version: string, limits: SandboxLimits): DockerSandboxProvider {
  return new DockerSandboxProvider({
    docker: dockerClient,
    owner: currentOwner('cli', version),
    spec: () => ({ image, limits, warmRunner: true, preloadModules: [...DEFAULTS.preloadModules] }),
    imageSettingHint: 'BENCH_IMAGE',
    log: silentLogger,
    idleMs: 0,
  });
}

export async function benchSession(dockerClient: Dockerode, image: string, n: number, version: string, limits: SandboxLimits, gapMs = 25): Promise<SessionBench> {
  const provider = stateBenchProvider(dockerClient, image, version, limits);
  const states = new SessionStates();
  const results: Record<string, Stat> = {};
  const call = (key: string, code: string, session: boolean) =>
    executeCode(provider, silentLogger, { code, sessionKey: key, ...(session ? { state: { reset: false, states } } : {}) }, RUN_LIMITS);
  const expect = (text: string, want: string) => {
    if (text !== want) throw new Error(`unexpected result ${JSON.stringify(text.slice(0, 300))}`);
  };
  // `gap`: idle time before each call, as a model's thinking leaves between tool calls; a session
  // call's process is forked ahead in it, once the last call is over (back to back, it waits for that fork).
  const timed = async (times: number, fn: () => Promise<void>, gap = 0) => {
    for (let i = 0; i < 2; i++) await fn();
    const ms: number[] = [];
    for (let i = 0; i < times; i++) {
      if (gap) await new Promise((r) => setTimeout(r, gap));
      const t = process.hrtime.bigint();
      await fn();
      ms.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    return stat(ms);
  };
  try {
    const sKey = `bench:session:${process.pid}`;
    const fKey = `bench:fresh:${process.pid}`;
    await call(sKey, 'x = 41', true);
    await call(fKey, 'print(1)', false);
    for (const key of [sKey, fKey]) if (!(await provider.active.get(key)!.warmedUp(60_000))) throw new Error('the warm runner did not come up');
    const session = provider.active.get(sKey)!.id;
    const fresh = provider.active.get(fKey)!.id;
    results['session.print(x+1)'] = await timed(n, async () => expect((await call(sKey, 'print(x + 1)', true)).text, `stdout:\n42\n\n${KEPT}`), gapMs);
    results['session.print(x+1).backToBack'] = await timed(n, async () => expect((await call(sKey, 'print(x + 1)', true)).text, `stdout:\n42\n\n${KEPT}`));
    results['session.print(1)'] = await timed(n, async () => expect((await call(sKey, 'print(1)', true)).text, `stdout:\n1\n\n${KEPT}`), gapMs);
    results['fresh.print(1)'] = await timed(n, async () => expect((await call(fKey, 'print(1)', false)).text, 'stdout:\n1'), gapMs);
    const faults = await faultsPerCall(session, n, async () => expect((await call(sKey, 'print(x + 1)', true)).text, `stdout:\n42\n\n${KEPT}`));
    // On the channel itself, in a session of its own with the same small state: calls made there
    // keep a state the host's bookkeeping did not see, so this session takes no other call.
    const pKey = `bench:session-phases:${process.pid}`;
    await call(pKey, 'x = 41', true);
    if (!(await provider.active.get(pKey)!.warmedUp(60_000))) throw new Error('the warm runner did not come up');
    const phases = await warmPhases(provider.active.get(pKey)!, n, gapMs, { session: true });
    await provider.release(pKey);

    // Memory: the same 100 MB DataFrame in each mode, then a question about it in session mode.
    const idleSession = await memoryMb(session);
    const idleFresh = await memoryMb(fresh);
    expect((await call(sKey, LOAD_DF, true)).text, `stdout:\n100\n\n${KEPT}`);
    expect((await call(fKey, LOAD_DF, false)).text, 'stdout:\n100');
    await new Promise((r) => setTimeout(r, 500));
    const keptDataFrame = await memoryMb(session);
    const freshAfterDataFrame = await memoryMb(fresh);
    results['session.question on the kept 100 MB DataFrame'] = await timed(n, async () => expect((await call(sKey, ASK_DF, true)).text, `stdout:\n0.5\n\n${KEPT}`));
    results['fresh.load the 100 MB DataFrame and ask'] = await timed(Math.max(3, Math.round(n / 6)), async () =>
      expect((await call(fKey, `${LOAD_DF}\n${ASK_DF}`, false)).text, 'stdout:\n100\n0.5'),
    );
    // Last: the kernel's imports would count in the container's memory (its page cache) above.
    results['jupyterKernel.print(x+1)'] = stat(
      JSON.parse((await docker('exec', '-u', `${SANDBOX_UID}:${SANDBOX_GID}`, '-w', '/sandbox/tmp', session, 'python3', '-c', JUPYTER(n))).trim().split('\n').pop()!) as number[],
    );
    const r = (k: string) => results[k]!.median;
    return {
      phases,
      results,
      memoryMb: { idleSession, keptDataFrame, idleFresh, freshAfterDataFrame },
      faults,
      ratios: {
        'session call (print(x + 1)) / fresh call (print(1)) (no target)': r('session.print(x+1)') / r('fresh.print(1)'),
        'session call (print(x + 1)) / Jupyter kernel round trip (target <= 1.3)': r('session.print(x+1)') / r('jupyterKernel.print(x+1)'),
        'question on a kept 100 MB DataFrame / fresh load and question (no target)':
          r('session.question on the kept 100 MB DataFrame') / r('fresh.load the 100 MB DataFrame and ask'),
      },
    };
  } finally {
    await provider.dispose();
  }
}

/** Prints what benchSession measured (the bench's table format). */
export function printSession(b: SessionBench): void {
  printTable('session mode', Object.entries(b.results));
  const m = b.memoryMb;
  console.log(
    `sandbox memory: session idle ${m.idleSession.toFixed(1)} MB, with the kept 100 MB DataFrame ${m.keptDataFrame.toFixed(1)} MB ` +
      `(+${(m.keptDataFrame - m.idleSession).toFixed(1)} MB); fresh idle ${m.idleFresh.toFixed(1)} MB, after the same call ${m.freshAfterDataFrame.toFixed(1)} MB\n`,
  );
  console.log(`page faults of a session call (print(x + 1)): ${describeFaults(b.faults)}\n`);
  printTable('a session call on the runner channel, by phase', Object.entries(b.phases));
  printRatios(b.ratios);
}

if (require.main === module) {
  runStandalone(benchSession(createDockerClient(), STANDALONE.image, STANDALONE.n(30), STANDALONE.version, STANDALONE.limits), printSession);
}
