/**
 * The bench's runtime columns: the same calls under runc and under gVisor's runsc, so the cost of
 * the stronger boundary is a measured ratio. Uses a data image (codeact-sandbox/data:*) when one is
 * on the machine, else the bench image.
 */
import { executeCode } from '../src/core/executeCode';
import { DEFAULTS, type SandboxLimits } from '../src/core/limits';
import { silentLogger } from '../src/core/logger';
import type Dockerode from 'dockerode';
import { DockerSandboxProvider } from '../src/docker/pool/dockerSandboxProvider';
import { engineRuntimes } from '../src/docker/engine/runtime';
import { SANDBOX_GID, SANDBOX_UID } from '../src/docker/container/guest';
import { currentOwner } from '../src/docker/container/labels';
import { FORK_SCRIPT, warmPhases, type Phases } from './bench/phases';
import { syscallsPerCall, type CallSyscalls } from './bench/syscalls';
import { attachRoundTrip } from './bench/attach';

export interface Stat {
  n: number;
  min: number;
  median: number;
  max: number;
}

/** Idle time before each call of the `.gap` rows, as a model's thinking leaves between tool calls. */
export const RUNTIME_GAP_MS = 300;

export interface BenchTools {
  N: number;
  LIMITS: SandboxLimits;
  VERSION: string;
  PRINT1: string;
  PANDAS: string;
  pandasOut: RegExp;
  runLimits: { timeoutMs: number; outputBudgetBytes: number; maxOutputBytes: number };
  repeat(n: number, fn: () => Promise<unknown>, warmup?: number, gapMs?: number): Promise<Stat>;
  time(fn: () => Promise<unknown>): Promise<number>;
  stat(ms: number[]): Stat;
  docker(...args: string[]): Promise<string>;
  /** Runs a Python script in a container as the sandbox user; its last line of output, as JSON. */
  inside<T>(container: string, script: string): Promise<T>;
  expectText(text: string, want: RegExp, what: string): void;
}

/** `code` timing its own statements: its output, then `@<ms>` on the last line. */
const OWN_TIMED = (code: string) => `import time as _t\n_t0 = _t.perf_counter()\n${code}\nprint("@%.3f" % ((_t.perf_counter() - _t0) * 1000))`;

/** The image for the runtime columns: the newest data image when there is one. */
async function runtimeImage(t: BenchTools, fallback: string): Promise<string> {
  const out = await t.docker('image', 'ls', 'codeact-sandbox/data', '--format', '{{.Repository}}:{{.Tag}}');
  return out.split('\n').find((l) => l && !l.endsWith(':<none>')) ?? fallback;
}

/**
 * Results keyed `runtime.<name>.<measurement>` and ratios runsc / runc; nothing when the engine has
 * no runsc. `heldBy`: the phase of a data chat's warm print(1) to which runsc adds the most.
 */
export async function measureRuntimes(
  dockerClient: Dockerode,
  t: BenchTools,
  fallbackImage: string,
): Promise<{ image?: string; results: Record<string, Stat>; ratios: Record<string, number>; skipped?: string; heldBy?: string; backToBack?: string; pandasOwn?: string; syscalls?: Record<string, CallSyscalls | string> }> {
  const { available } = await engineRuntimes(dockerClient);
  if (!available.includes('runsc')) return { results: {}, ratios: {}, skipped: 'the engine has no runsc runtime' };
  const image = await runtimeImage(t, fallbackImage);
  const results: Record<string, Stat> = {};
  const phasesOf: Record<string, Phases> = {};
  // Counted on runc only (see bench/syscalls.ts): a chat before it imports pandas, a data chat.
  const syscalls: Record<string, CallSyscalls | string> = {};
  for (const runtime of ['runc', 'runsc']) {
    process.stdout.write(`${runtime}: warm print(1), warm pandas, first call, docker exec ... `);
    const provider = new DockerSandboxProvider({
      docker: dockerClient,
      owner: currentOwner('cli', t.VERSION),
      spec: () => ({ image, limits: t.LIMITS, runtime, preloadModules: [...DEFAULTS.preloadModules] }),
      imageSettingHint: 'the data image',
      log: silentLogger,
      idleMs: 0,
    });
    const call = (key: string, code: string) => executeCode(provider, silentLogger, { code, sessionKey: key }, t.runLimits);
    try {
      const key = `bench:${runtime}:${process.pid}`;
      const first = await call(key, t.PRINT1);
      if (!(await provider.active.get(key)!.warmedUp(60_000))) throw new Error(`the warm runner did not come up under ${runtime}`);
      const at = (m: string) => `runtime.${runtime}.${m}`;
      // A chat that has not imported the data stack (modules are preloaded on first use): back to
      // back, and with the pause a model's thinking leaves between calls, in which the runner
      // forks the next child (under gVisor a fork of a large interpreter costs ~100 ms).
      results[at('warm.print1')] = await t.repeat(t.N, async () => t.expectText((await call(key, t.PRINT1)).text, /^stdout:\n1$/, `${runtime} print(1)`));
      results[at('warm.print1.gap')] = await t.repeat(t.N, async () => t.expectText((await call(key, t.PRINT1)).text, /^stdout:\n1$/, `${runtime} print(1)`), 2, RUNTIME_GAP_MS);
      const runnerPid = Number((await t.docker('inspect', '--format', '{{.State.Pid}}', first.sandboxId)).trim());
      const gapPrint1 = async () => {
        await new Promise((r) => setTimeout(r, RUNTIME_GAP_MS));
        t.expectText((await call(key, t.PRINT1)).text, /^stdout:\n1$/, `${runtime} print(1)`);
      };
      if (runtime === 'runc') syscalls.plain = await syscallsPerCall(runnerPid, 10, gapPrint1);
      // Then it imports pandas: the runner starts over with it preloaded, and the calls after are a data chat's.
      await call(key, t.PANDAS);
      if (!(await provider.active.get(key)!.warmedUp(120_000))) throw new Error(`the warm runner did not come back under ${runtime}`);
      results[at('warm.pandas')] = await t.repeat(t.N, async () => t.expectText((await call(key, t.PANDAS)).text, t.pandasOut, `${runtime} pandas`));
      results[at('warm.pandas.gap')] = await t.repeat(t.N, async () => t.expectText((await call(key, t.PANDAS)).text, t.pandasOut, `${runtime} pandas`), 2, RUNTIME_GAP_MS);
      // The same program timing its own statements: what the runtime costs the program itself
      // (gVisor serves its page faults and system calls), apart from the call around it.
      const own: number[] = [];
      for (let i = 0; i < t.N + 2; i++) {
        await new Promise((r) => setTimeout(r, RUNTIME_GAP_MS));
        const text = (await call(key, OWN_TIMED(t.PANDAS))).text;
        const ms = /\n@([0-9.]+)$/.exec(text);
        if (!ms) throw new Error(`${runtime} timed pandas printed ${JSON.stringify(text.slice(0, 300))}`);
        if (i >= 2) own.push(Number(ms[1]));
      }
      results[at('warm.pandas.gap.program')] = t.stat(own);
      results[at('data.print1.gap')] = await t.repeat(t.N, async () => t.expectText((await call(key, t.PRINT1)).text, /^stdout:\n1$/, `${runtime} print(1)`), 2, RUNTIME_GAP_MS);
      // The same call on the runner channel, by phase: which part of it the runtime makes dearer.
      phasesOf[runtime] = await warmPhases(provider.active.get(key)!, t.N, RUNTIME_GAP_MS);
      for (const [phase, s] of Object.entries(phasesOf[runtime]!)) results[at(`data.print1.gap.${phase}`)] = s;
      results[at('attachRoundTrip.gap')] = await attachRoundTrip(dockerClient, image, runtime, t.N, RUNTIME_GAP_MS);
      if (runtime === 'runc') syscalls.data = await syscallsPerCall(runnerPid, 10, gapPrint1);
      const user = `${SANDBOX_UID}:${SANDBOX_GID}`;
      // What a back-to-back call waits for: the runner forks the next child once a call ends. The
      // same fork and exit, done by an interpreter in this sandbox, bare and with the data stack.
      for (const [name, modules] of [['bare', []], ['preloaded', DEFAULTS.preloadModules]] as const) {
        const { forkAndExit } = await t.inside<{ forkAndExit: number[] }>(first.sandboxId, FORK_SCRIPT(modules, t.N));
        results[at(`forkAndExit.${name}`)] = t.stat(forkAndExit);
      }
      results[at('dockerExecCli.print1')] = await t.repeat(Math.max(5, t.N / 3), () => t.docker('exec', '-u', user, first.sandboxId, 'python3', '-c', t.PRINT1));
      results[at('dockerExecCli.pandas')] = await t.repeat(Math.max(3, t.N / 6), () => t.docker('exec', '-u', user, first.sandboxId, 'python3', '-c', t.PANDAS), 1);
      // A new session's first call, pre-warmed as a chat does it, and cold (created by the call).
      const prewarmed: number[] = [];
      const cold: number[] = [];
      for (let i = 0; i < Math.max(3, Math.round(t.N / 6)); i++) {
        const pk = `${key}:first:${i}`;
        provider.prewarm(pk);
        for (let w = 0; w < 600 && !provider.active.get(pk); w++) await new Promise((r) => setTimeout(r, 50));
        if (!(await provider.active.get(pk)!.warmedUp(60_000))) throw new Error(`prewarmed runner not ready under ${runtime}`);
        prewarmed.push(await t.time(async () => t.expectText((await call(pk, t.PRINT1)).text, /^stdout:\n1$/, 'first call')));
        await provider.release(pk);
        const ck = `${key}:cold:${i}`;
        cold.push(await t.time(async () => t.expectText((await call(ck, t.PRINT1)).text, /^stdout:\n1$/, 'cold first call')));
        await provider.release(ck);
      }
      results[at('first.print1.prewarmed')] = t.stat(prewarmed);
      results[at('first.print1.cold')] = t.stat(cold);
    } finally {
      await provider.dispose();
    }
    console.log('done');
  }
  const ratios: Record<string, number> = {};
  for (const m of ['warm.print1', 'warm.pandas', 'warm.print1.gap', 'warm.pandas.gap', 'data.print1.gap', 'first.print1.prewarmed', 'first.print1.cold', 'dockerExecCli.print1', 'dockerExecCli.pandas']) {
    ratios[`runsc / runc: ${m}`] = results[`runtime.runsc.${m}`]!.median / results[`runtime.runc.${m}`]!.median;
  }
  const [runc, runsc] = [phasesOf.runc!, phasesOf.runsc!];
  const extra = (p: keyof Phases) => runsc[p].median - runc[p].median;
  const held = (Object.keys(runc) as (keyof Phases)[]).filter((p) => p !== 'channelTotal').sort((a, b) => extra(b) - extra(a))[0]!;
  // Medians of the parts do not add up to the median of the whole: each is given as it is.
  const m = (rt: string, k: string, digits = 1) => results[`runtime.${rt}.${k}`]!.median.toFixed(digits);
  const heldBy =
    `${held} (${runc[held].median.toFixed(1)} -> ${runsc[held].median.toFixed(1)} ms; the whole channel ${runc.channelTotal.median.toFixed(1)} -> ${runsc.channelTotal.median.toFixed(1)}; ` +
    `the engine's attach stream alone, a byte there and back, ${m('runc', 'attachRoundTrip.gap', 2)} -> ${m('runsc', 'attachRoundTrip.gap', 2)})`;
  const backToBack =
    `the fork and exit of the next child, which each call waits for when the last one has just ended: ` +
    `${m('runsc', 'forkAndExit.bare')} ms under runsc against ${m('runc', 'forkAndExit.bare')} under runc for the bare interpreter (a warm print(1): ${m('runsc', 'warm.print1')} against ${m('runc', 'warm.print1')}), ` +
    `${m('runsc', 'forkAndExit.preloaded')} against ${m('runc', 'forkAndExit.preloaded')} with the data stack (a warm pandas call: ${m('runsc', 'warm.pandas')} against ${m('runc', 'warm.pandas')})`;
  const pandasOwn =
    `the program's own statements, timed by the program: ${m('runc', 'warm.pandas.gap.program')} ms under runc, ${m('runsc', 'warm.pandas.gap.program')} under runsc ` +
    `(${(results['runtime.runsc.warm.pandas.gap.program']!.median / results['runtime.runc.warm.pandas.gap.program']!.median).toFixed(2)} x); the whole call ${m('runc', 'warm.pandas.gap')} -> ${m('runsc', 'warm.pandas.gap')}`;
  return { image, results, ratios, heldBy, backToBack, pandasOwn, syscalls };
}
