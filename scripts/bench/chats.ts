/**
 * Two kinds of chat, with the preload modules preloaded on first use (the default) and at the
 * sandbox's start: a chat whose programs never import the data stack (print(1)), and one whose
 * programs do (pandas, then print(1) in the same chat). Each against its floor, the fork and exit
 * of the interpreter its calls are forked from (bare, or with the modules imported), measured in
 * the same sandbox, and with its page faults per call, which do not depend on the machine. Each
 * mode is one window (one provider): the plain chat comes first, then new data chats.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type Dockerode from 'dockerode';
import { executeCode } from '../../src/core/executeCode';
import { DEFAULTS, type SandboxLimits } from '../../src/core/limits';
import { silentLogger } from '../../src/core/logger';
import type { PreloadWhen } from '../../src/core/runnerProtocol';
import { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { SANDBOX_GID, SANDBOX_UID } from '../../src/docker/container/guest';
import { currentOwner } from '../../src/docker/container/labels';
import { FORK_SCRIPT } from './phases';
import { faultsPerCall, type CallFaults } from './faults';
import { stat, type Stat } from './stats';

const execFileP = promisify(execFile);
const RUN_LIMITS = { timeoutMs: 120_000, outputBudgetBytes: DEFAULTS.outputBudgetBytes, maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024 };
const PRINT1 = 'print(1)';
const PANDAS = 'import pandas as pd\nprint(pd.DataFrame({"a": range(1000), "b": range(1000)}).sum())';
const PANDAS_OUT = /^stdout:\na\s+499500\nb\s+499500\ndtype: int64$/;
/**
 * New data chats whose first call is timed, in each mode: the window's first, which pays the
 * import on first use, and later ones, whose sandboxes are made with what the window used preloaded.
 */
const FIRST_CHATS = 4;

export interface ChatsBench {
  /** `chats.<plain|data>.<call>.<used|start>` (`firstPandas`: the window's first data chat; `firstPandasLater`: the next ones), `forkAndExit.<bare|preloaded>Interpreter` and its part after the fork, `afterFork.*`. */
  results: Record<string, Stat>;
  /** Page faults per call: `<plain|data>.<used|start>`, print(1) in that chat. */
  faults: Record<string, CallFaults>;
  ratios: Record<string, number>;
}

async function inside<T>(container: string, script: string): Promise<T> {
  const { stdout } = await execFileP('docker', ['exec', '-u', `${SANDBOX_UID}:${SANDBOX_GID}`, '-w', '/sandbox/tmp', container, 'python3', '-c', script]);
  return JSON.parse(stdout.trim().split('\n').pop()!) as T;
}

function check(text: string, want: RegExp, what: string): void {
  if (!want.test(text)) throw new Error(`${what}: unexpected result ${JSON.stringify(text.slice(0, 300))}`);
}

export async function benchChats(docker: Dockerode, image: string, n: number, version: string, limits: SandboxLimits, gapMs: number): Promise<ChatsBench> {
  const results: Record<string, Stat> = {};
  const faults: Record<string, CallFaults> = {};
  const series = async (count: number, fn: () => Promise<void>) => {
    for (let i = 0; i < 2; i++) await fn();
    const ms: number[] = [];
    for (let i = 0; i < count; i++) {
      await new Promise((r) => setTimeout(r, gapMs));
      const t = performance.now();
      await fn();
      ms.push(performance.now() - t);
    }
    return stat(ms);
  };
  for (const when of ['used', 'start'] as PreloadWhen[]) {
    const provider = new DockerSandboxProvider({
      docker,
      owner: currentOwner('cli', version),
      spec: () => ({ image, limits, preloadModules: [...DEFAULTS.preloadModules], preloadWhen: when }),
      imageSettingHint: 'BENCH_IMAGE',
      log: silentLogger,
      idleMs: 0,
      spareSandboxes: 0,
    });
    const call = async (key: string, code: string, want: RegExp) => {
      const r = await executeCode(provider, silentLogger, { code, sessionKey: key }, RUN_LIMITS);
      check(r.text, want, `${when}: ${code.split('\n')[0]}`);
      return r.sandboxId;
    };
    /** A chat's sandbox, made and warm before its first call, as when a chat is about to call. */
    const ready = async (key: string) => {
      provider.prewarm(key);
      for (let t = 0; t < 600 && !provider.active.get(key); t++) await new Promise((r) => setTimeout(r, 50));
      if (!(await provider.active.get(key)!.warmedUp(120_000))) throw new Error(`${when}: the runner did not come up`);
    };
    try {
      const plain = `bench:chat:plain:${when}:${process.pid}`;
      await ready(plain);
      results[`chats.plain.print1.${when}`] = await series(n, async () => void (await call(plain, PRINT1, /^stdout:\n1$/)));
      const plainBox = await call(plain, PRINT1, /^stdout:\n1$/);
      faults[`plain.${when}`] = await faultsPerCall(plainBox, Math.min(n, 20), async () => {
        await new Promise((r) => setTimeout(r, gapMs));
        await call(plain, PRINT1, /^stdout:\n1$/);
      });

      // A data chat's first call, in a few new chats; the last one goes on.
      const firsts: number[] = [];
      let data = '';
      let dataBox = '';
      for (let i = 0; i < FIRST_CHATS; i++) {
        if (data) await provider.release(data);
        data = `bench:chat:data:${when}:${process.pid}:${i}`;
        await ready(data);
        const t = performance.now();
        dataBox = await call(data, PANDAS, PANDAS_OUT);
        firsts.push(performance.now() - t);
      }
      results[`chats.data.firstPandas.${when}`] = stat(firsts.slice(0, 1));
      results[`chats.data.firstPandasLater.${when}`] = stat(firsts.slice(1));
      // Preloading on use: the runner starts over with pandas; the next calls wait for it.
      if (!(await provider.active.get(data)!.warmedUp(120_000))) throw new Error(`${when}: the runner did not come back`);
      results[`chats.data.pandas.${when}`] = await series(n, async () => void (await call(data, PANDAS, PANDAS_OUT)));
      results[`chats.data.print1.${when}`] = await series(n, async () => void (await call(data, PRINT1, /^stdout:\n1$/)));
      faults[`data.${when}`] = await faultsPerCall(dataBox, Math.min(n, 20), async () => {
        await new Promise((r) => setTimeout(r, gapMs));
        await call(data, PRINT1, /^stdout:\n1$/);
      });
      if (when === 'used') {
        type Forks = { fork: number[]; forkAndExit: number[] };
        const bare = await inside<Forks>(plainBox, FORK_SCRIPT([], n));
        const preloaded = await inside<Forks>(dataBox, FORK_SCRIPT(DEFAULTS.preloadModules, n));
        results['forkAndExit.bareInterpreter'] = stat(bare.forkAndExit);
        results['forkAndExit.preloadedInterpreter'] = stat(preloaded.forkAndExit);
        // The part after the fork (the child's exit and its reaping): a call's child is forked
        // ahead, so this part of the floor is on every call's way, the fork is not.
        const afterFork = (f: Forks) => stat(f.forkAndExit.map((ms, i) => ms - f.fork[i]!));
        results['afterFork.bareInterpreter'] = afterFork(bare);
        results['afterFork.preloadedInterpreter'] = afterFork(preloaded);
      }
    } finally {
      await provider.dispose();
    }
  }
  const r = (k: string) => results[k]!.median;
  const ratios: Record<string, number> = {
    'plain chat: warm print(1), preloaded on use / at start (below 1: what a chat that never imports pandas saves)': r('chats.plain.print1.used') / r('chats.plain.print1.start'),
    'plain chat: program page faults per print(1), on use / at start (no target)': faults['plain.used']!.programs.minor / faults['plain.start']!.programs.minor,
    [`plain chat: warm print(1), ${gapMs} ms between calls / fork and exit of the bare interpreter (target <= 1.2)`]: r('chats.plain.print1.used') / r('forkAndExit.bareInterpreter'),
    'data chat: warm pandas, preloaded on use / at start (target <= 1.1: it does not pay the import again)': r('chats.data.pandas.used') / r('chats.data.pandas.start'),
    [`data chat: warm print(1), ${gapMs} ms between calls / fork and exit of the preloaded interpreter (target <= 1.2)`]: r('chats.data.print1.used') / r('forkAndExit.preloadedInterpreter'),
    "data chat, the window's first: its first pandas call, preloaded on use / at start (paid once)": r('chats.data.firstPandas.used') / r('chats.data.firstPandas.start'),
    'a later new data chat of the window: its first pandas call, preloaded on use / at start (target <= 1.1)': r('chats.data.firstPandasLater.used') / r('chats.data.firstPandasLater.start'),
  };
  return { results, faults, ratios };
}
