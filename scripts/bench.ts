/**
 * `npm run bench`: the warm runner against the alternatives, side by side, in one run on this
 * machine. Medians over repeated runs with min and max (the machine's noise), a table on stdout
 * and test-results/bench/bench.json. Not a test: nothing here fails on a number.
 *
 * Needs the bench image (scripts/ensure-test-image.sh --bench: the data stack and python3-ipykernel);
 * `npm run bench` makes sure of it and of the engine first. BENCH_IMAGE and BENCH_N override.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { executeCode } from '../src/core/executeCode';
import { DEFAULTS, type SandboxLimits } from '../src/core/limits';
import { silentLogger } from '../src/core/logger';
import type { ProgramRun, StagedFile } from '../src/core/sandbox';
import { createDockerClient } from '../src/docker/engine/connection';
import { DockerSandboxProvider } from '../src/docker/pool/dockerSandboxProvider';
import { SANDBOX_GID, SANDBOX_UID, sandboxEnv } from '../src/docker/container/guest';
import { currentOwner } from '../src/docker/container/labels';
import { putRunFiles } from '../src/docker/files/workArea';
import { openInside } from '../src/storage/workspaceFolder';
import { QUICK_MIX, loadCase, type LoadResult } from './bench/load';
import { describeThroughput } from './bench/cpu';
import { FORK_SCRIPT, heaviestPhase, warmPhases, type Phases } from './bench/phases';
import { attachRoundTrip } from './bench/attach';
import { benchDataImage, type DataImageBench } from './bench/dataImage';
import { benchCliRun, benchCliStart, heaviestCliPhase, type CliRunBench, type CliStartBench } from './bench/cliStart';
import { benchSession, printSession, type SessionBench } from './bench/session';
import { benchResume, printResume, type ResumeBench } from './bench/resume';
import { benchNetwork, type NetworkBench } from './bench/network';
import { benchCredentials, type CredentialsBench } from './bench/credentials';
import { benchChats, type ChatsBench } from './bench/chats';
import { benchMcp, type McpBench } from './bench/mcp';
import { benchCard, type CardBench } from './bench/card';
import { printTable, stat, type Stat } from './bench/stats';
import { describeFaults, faultsPerCall, pageTouchMicros, type CallFaults } from './bench/faults';
import { describeSyscalls } from './bench/syscalls';
import { measureRuntimes, RUNTIME_GAP_MS } from './benchRuntimes';

const execFileP = promisify(execFile);
const IMAGE = process.env.BENCH_IMAGE ?? 'codeact-sandbox/python-bench:bookworm';
const N = Number(process.env.BENCH_N ?? 30);
const LIMITS: SandboxLimits = { memoryMb: 2048, cpus: 2, pidsLimit: 256, workAreaMb: 1024 };
/** The load case runs at the extension's default limits (its memory hog writes twice the limit). */
const LOAD_LIMITS: SandboxLimits = { memoryMb: DEFAULTS.memoryMb, cpus: DEFAULTS.cpus, pidsLimit: DEFAULTS.pidsLimit, workAreaMb: DEFAULTS.workAreaMb };
const VERSION = `0.0.0-bench.${process.pid}`;
const RUN_LIMITS = { timeoutMs: 120_000, outputBudgetBytes: DEFAULTS.outputBudgetBytes, maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024 };

const PRINT1 = 'print(1)';
const PANDAS = 'import pandas as pd\nprint(pd.DataFrame({"a": range(1000), "b": range(1000)}).sum())';
const SHARE_MB = 100;
const pandasOut = /^stdout:\na\s+499500\nb\s+499500\ndtype: int64$/;

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

/** `gapMs`: idle time between calls, as a model's thinking leaves between tool calls (0: back to back). */
async function repeat(n: number, fn: () => Promise<unknown>, warmup = 2, gapMs = 0): Promise<Stat> {
  for (let i = 0; i < warmup; i++) await fn();
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
    ms.push(await time(fn));
  }
  return stat(ms);
}

/** Idle time between the calls of the `.gap` rows: the runner forks the next child in it. */
const GAP_MS = 25;

async function docker(...args: string[]): Promise<string> {
  const { stdout } = await execFileP('docker', args, { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

function expectText(text: string, want: RegExp, what: string): void {
  if (!want.test(text)) throw new Error(`${what}: unexpected result ${JSON.stringify(text.slice(0, 300))}`);
}

/** Runs a Python script inside the container (as the sandbox user) and parses the JSON it prints. */
async function inside<T>(container: string, script: string): Promise<T> {
  const out = await docker('exec', '-u', `${SANDBOX_UID}:${SANDBOX_GID}`, '-w', '/sandbox/tmp', container, 'python3', '-c', script);
  return JSON.parse(out.trim().split('\n').pop()!) as T;
}

const FLOOR_SCRIPT = (code: string, n: number) => `
import json, subprocess, sys, time
code = ${JSON.stringify(code)}
ms = []
for i in range(${n} + 2):
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
    if i >= 2:
        ms.append((time.perf_counter() - t) * 1000)
print(json.dumps(ms))
`;

const JUPYTER_SCRIPT = (n: number) => `
import json, time
from jupyter_client.manager import start_new_kernel
t = time.perf_counter()
km, kc = start_new_kernel(kernel_name="python3")
startup = (time.perf_counter() - t) * 1000
def rt(code):
    t = time.perf_counter()
    reply = kc.execute_interactive(code, timeout=60, output_hook=lambda m: None)
    assert reply["content"]["status"] == "ok", reply["content"]
    return (time.perf_counter() - t) * 1000
for _ in range(2):
    rt(${JSON.stringify(PRINT1)})
    rt(${JSON.stringify(PANDAS)})
print1 = [rt(${JSON.stringify(PRINT1)}) for _ in range(${n})]
pandas = [rt(${JSON.stringify(PANDAS)}) for _ in range(${n})]
kc.stop_channels()
km.shutdown_kernel(now=True)
print(json.dumps({"startup": startup, "print1": print1, "pandas": pandas}))
`;

function dockerRunArgs(code: string): string[] {
  return [
    'run', '--rm', '--network', 'none', '--read-only', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges',
    '--user', `${SANDBOX_UID}:${SANDBOX_GID}`, '--tmpfs', `/sandbox:uid=${SANDBOX_UID},gid=${SANDBOX_GID},mode=0700`,
    '--memory', `${LIMITS.memoryMb}m`, '--pids-limit', String(LIMITS.pidsLimit), '--workdir', '/sandbox', '--log-driver', 'none',
    ...sandboxEnv().flatMap((e) => ['-e', e]), '--entrypoint', '', IMAGE, 'python3', '-c', code,
  ];
}

async function main(): Promise<void> {
  const dockerClient = createDockerClient();
  const info = (await docker('version', '--format', '{{.Server.Version}}')).trim();
  const machine = { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? '', memGb: Math.round(os.totalmem() / 2 ** 30), kernel: os.release(), docker: info };
  console.log(`bench: image ${IMAGE}, ${N} runs each, ${machine.cpus} CPUs (${machine.cpuModel}), Docker ${info}, kernel ${machine.kernel}\n`);

  const makeProvider = (warmRunner: boolean, more: { spareSandboxes?: number; maxSandboxes?: number; limits?: SandboxLimits } = {}) =>
    new DockerSandboxProvider({
      docker: dockerClient,
      owner: currentOwner('cli', VERSION),
      spec: () => ({ image: IMAGE, limits: more.limits ?? LIMITS, warmRunner, preloadModules: [...DEFAULTS.preloadModules] }),
      imageSettingHint: 'BENCH_IMAGE',
      log: silentLogger,
      idleMs: 0,
      ...(more.spareSandboxes !== undefined ? { spareSandboxes: more.spareSandboxes } : {}),
      ...(more.maxSandboxes !== undefined ? { maxSandboxes: more.maxSandboxes } : {}),
    });
  const warm = makeProvider(true);
  const plain = makeProvider(false);
  const results: Record<string, Stat> = {};
  const notes: Record<string, unknown> = {};
  let phases: Phases | undefined;
  let plainPhases: Phases | undefined;
  let load: LoadResult | undefined;
  let loadSerial: LoadResult | undefined;
  let loadQuick: LoadResult | undefined;
  let dataImage: DataImageBench | undefined;
  let session: SessionBench | undefined;
  let resume: ResumeBench | undefined;
  let cliRun: CliRunBench | undefined;
  let warmFaults: CallFaults | undefined;
  let network: NetworkBench | undefined;
  let credentials: CredentialsBench | undefined;
  let chats: ChatsBench | undefined;
  let mcp: McpBench | undefined;
  let card: CardBench | undefined;
  const providers = [warm, plain];
  // First, while nothing else runs: the command line's start against Node's own.
  process.stdout.write('command line start ... ');
  const cliStart: CliStartBench = await benchCliStart(N);
  Object.assign(results, cliStart.results);
  console.log('done');
  const share = path.join(os.tmpdir(), `codeact-bench-${randomBytes(4).toString('hex')}.bin`);
  try {
    const call = (provider: DockerSandboxProvider, key: string, code: string, files?: StagedFile[]) =>
      executeCode(provider, silentLogger, { code, sessionKey: key, ...(files ? { files } : {}) }, RUN_LIMITS);
    const wKey = `bench:warm:${process.pid}`;
    const pKey = `bench:plain:${process.pid}`;
    const first = await call(warm, wKey, PRINT1);
    await call(plain, pKey, PRINT1);
    const sandbox = warm.active.get(wKey)!;
    if (!(await sandbox.warmedUp(60_000))) throw new Error('the warm runner did not come up in the bench image');
    const container = first.sandboxId;
    notes.pageTouchMicros = Math.round((await pageTouchMicros(container)) * 100) / 100;
    console.log(`the first touch of a page costs ${notes.pageTouchMicros} µs in a sandbox on this machine\n`);

    process.stdout.write('print(1) ... ');
    results['print1.pipeline.warm'] = await repeat(N, async () => expectText((await call(warm, wKey, PRINT1)).text, /^stdout:\n1$/, 'warm print(1)'));
    results['print1.pipeline.warm.gap'] = await repeat(N, async () => expectText((await call(warm, wKey, PRINT1)).text, /^stdout:\n1$/, 'warm print(1)'), 2, GAP_MS);
    results['print1.pipeline.plainExec'] = await repeat(N, async () => expectText((await call(plain, pKey, PRINT1)).text, /^stdout:\n1$/, 'plain print(1)'));
    results['print1.dockerExecCli'] = await repeat(N, () => docker('exec', '-u', `${SANDBOX_UID}:${SANDBOX_GID}`, container, 'python3', '-c', PRINT1));
    results['print1.bareInterpreter'] = stat(await inside<number[]>(container, FLOOR_SCRIPT(PRINT1, N)));
    // Before the chat's first pandas call: its calls are forked from the bare interpreter.
    plainPhases = await warmPhases(sandbox, N, GAP_MS);
    console.log('done');

    process.stdout.write('pandas program ... ');
    results['pandas.pipeline.warm'] = await repeat(N, async () => expectText((await call(warm, wKey, PANDAS)).text, pandasOut, 'warm pandas'));
    results['pandas.pipeline.warm.gap'] = await repeat(N, async () => expectText((await call(warm, wKey, PANDAS)).text, pandasOut, 'warm pandas'), 2, GAP_MS);
    results['pandas.dockerExecCli'] = await repeat(Math.max(5, Math.round(N / 3)), () => docker('exec', '-u', `${SANDBOX_UID}:${SANDBOX_GID}`, container, 'python3', '-c', PANDAS));
    results['pandas.bareInterpreter'] = stat(await inside<number[]>(container, FLOOR_SCRIPT(PANDAS, Math.max(5, Math.round(N / 3)))));
    console.log('done');

    process.stdout.write('where a warm call goes ... ');
    phases = await warmPhases(sandbox, N, GAP_MS);
    warmFaults = await faultsPerCall(container, N, async () => {
      await new Promise((r) => setTimeout(r, GAP_MS));
      expectText((await call(warm, wKey, PRINT1)).text, /^stdout:\n1$/, 'warm print(1)');
    });
    const forks = await inside<{ fork: number[] }>(container, FORK_SCRIPT(DEFAULTS.preloadModules, N));
    results['fork.preloadedInterpreter'] = stat(forks.fork);
    results['attach.roundTrip'] = await attachRoundTrip(dockerClient, IMAGE, undefined, N, GAP_MS);
    console.log('done');

    process.stdout.write('two kinds of chat, modules preloaded on use and at start ... ');
    chats = await benchChats(dockerClient, IMAGE, N, VERSION, LIMITS, GAP_MS);
    Object.assign(results, chats.results);
    console.log('done');

    process.stdout.write('Jupyter kernel round trip ... ');
    const jup = await inside<{ startup: number; print1: number[]; pandas: number[] }>(container, JUPYTER_SCRIPT(N));
    results['print1.jupyterKernel'] = stat(jup.print1);
    results['pandas.jupyterKernel'] = stat(jup.pandas);
    notes.jupyterKernelStartupMs = Math.round(jup.startup);
    console.log('done');

    process.stdout.write('first call of a new session ... ');
    const firsts: number[] = [];
    const firstsPandas: number[] = [];
    const colds: number[] = [];
    const FIRST_N = Math.max(3, Math.round(N / 6));
    for (let i = 0; i < FIRST_N; i++) {
      // Pre-warmed as the extension does when a chat is about to call the tool: the sandbox is
      // created (and its runner preloads) while the model is still writing the program.
      for (const [list, code, re] of [
        [firsts, PRINT1, /^stdout:\n1$/],
        [firstsPandas, PANDAS, pandasOut],
      ] as const) {
        const key = `bench:first:${process.pid}:${i}:${code.length}`;
        warm.prewarm(key);
        for (let t = 0; t < 600 && !warm.active.get(key); t++) await new Promise((r) => setTimeout(r, 50));
        if (!(await warm.active.get(key)!.warmedUp(60_000))) throw new Error('prewarmed runner not ready');
        list.push(await time(async () => expectText((await call(warm, key, code)).text, re, 'first call')));
        await warm.release(key);
      }
      const coldKey = `bench:cold:${process.pid}:${i}`;
      colds.push(await time(async () => expectText((await call(warm, coldKey, PRINT1)).text, /^stdout:\n1$/, 'cold first call')));
      await warm.release(coldKey);
    }
    results['first.print1.pipeline.prewarmed'] = stat(firsts);
    results['first.pandas.pipeline.prewarmed'] = stat(firstsPandas);
    results['first.print1.pipeline.cold'] = stat(colds);
    // No head start at all: the chat's first call arrives with nothing created for it, and takes
    // the spare the pool made after the previous new chat.
    const pooled = makeProvider(true, { spareSandboxes: 1 });
    providers.push(pooled);
    await pooled.fillSpares();
    // The window's first pandas chat imports pandas; the spares made after it have it preloaded.
    const spareFirsts: Record<string, number[]> = { print1: [], pandas: [], windowFirstPandas: [] };
    for (let i = 0; i < FIRST_N; i++) {
      for (const [which, code, re] of [
        ['print1', PRINT1, /^stdout:\n1$/],
        ['pandas', PANDAS, pandasOut],
      ] as const) {
        for (let t = 0; t < 600 && pooled.spares.length === 0; t++) await new Promise((r) => setTimeout(r, 50));
        if (!(await pooled.spares[0]?.warmedUp(60_000))) throw new Error('the spare did not come up');
        const key = `bench:spare:${process.pid}:${i}:${which}`;
        const ms = await time(async () => expectText((await call(pooled, key, code)).text, re, 'first call (spare)'));
        spareFirsts[which === 'pandas' && i === 0 ? 'windowFirstPandas' : which]!.push(ms);
        await pooled.release(key);
      }
    }
    results['first.print1.pipeline.spare'] = stat(spareFirsts.print1!);
    results['first.pandas.pipeline.spare'] = stat(spareFirsts.pandas!);
    results['first.pandas.pipeline.spare.windowFirst'] = stat(spareFirsts.windowFirstPandas!);
    results['first.print1.dockerRun'] = await repeat(FIRST_N, () => docker(...dockerRunArgs(PRINT1)), 1);
    results['first.pandas.dockerRun'] = await repeat(FIRST_N, () => docker(...dockerRunArgs(PANDAS)), 1);
    console.log('done');

    process.stdout.write(`sharing a ${SHARE_MB} MB file ... `);
    fs.writeFileSync(share, randomBytes(SHARE_MB * 1024 * 1024));
    // Opened as the workspace reader opens shared files.
    const opened = await openInside(fs.realpathSync(os.tmpdir()), share);
    if ('refused' in opened) throw new Error(`the share's file: ${opened.refused}`);
    const staged: StagedFile = { name: 'data.bin', ...opened };
    const shareCode = 'import os\nprint(os.path.getsize("data.bin"))\nos.remove("data.bin")';
    const SHARE_N = Math.max(3, Math.round(N / 6));
    // The three ways in rounds, each round in another order, every copy removed after it: none of
    // them always comes after the same one, or into a work area the others filled.
    const shareWays: [string, (i: number) => Promise<unknown>][] = [
      ['share.pipeline', async () => expectText((await call(warm, wKey, shareCode, [staged])).text, new RegExp(`^stdout:\\n${SHARE_MB * 1024 * 1024}$`), 'share')],
      ['share.dockerCp', async () => {
        await docker('cp', share, `${container}:/sandbox/tmp/data.bin`);
        return () => docker('exec', '-u', `${SANDBOX_UID}:${SANDBOX_GID}`, container, 'rm', '-f', '/sandbox/tmp/data.bin');
      }],
      // The copy alone, as a call makes it (one archive: the run's directory, program and file),
      // without the program's run and the result: what the call's share costs over docker cp.
      ['share.copyIn', async (i) => {
        const callId = `share-${process.pid}-${i}`;
        await putRunFiles(sandbox, callId, { code: shareCode, files: [staged] } as unknown as ProgramRun, 60_000);
        return () => docker('exec', '-u', `${SANDBOX_UID}:${SANDBOX_GID}`, container, 'rm', '-rf', `/sandbox/runs/${callId}`);
      }],
    ];
    const shareTimes = new Map<string, number[]>(shareWays.map(([name]) => [name, []]));
    for (let round = 0; round <= SHARE_N; round++) {
      for (let k = 0; k < shareWays.length; k++) {
        const [name, way] = shareWays[(k + round) % shareWays.length]!;
        let undo: unknown;
        const ms = await time(async () => (undo = await way(round)));
        if (round > 0) shareTimes.get(name)!.push(ms);
        if (typeof undo === 'function') await (undo as () => Promise<unknown>)();
      }
    }
    for (const [name, ms] of shareTimes) results[name] = stat(ms);
    console.log('done');

    process.stdout.write('command line runs, MCP connections ... ');
    const cliDir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-bench-bundle-'));
    try {
      await execFileP(process.execPath, ['esbuild.mjs', '--cli-into', cliDir, '--version', VERSION]);
      cliRun = await benchCliRun(N, path.join(cliDir, 'cli.js'), IMAGE, VERSION, dockerClient, () => createDockerClient(), results['cli.nodeStart']!.median);
      Object.assign(results, cliRun.results);
      mcp = await benchMcp(path.join(cliDir, 'cli.js'), IMAGE, Math.max(3, Math.round(N / 6)), ['runc', 'auto']);
      Object.assign(results, mcp.results);
    } finally {
      fs.rmSync(cliDir, { recursive: true, force: true });
    }
    console.log('done');

    process.stdout.write("the chat's run card against the plain tool ... ");
    card = await benchCard(dockerClient, IMAGE, N, VERSION, LIMITS);
    Object.assign(results, card.results);
    console.log('done');

    process.stdout.write('session state ... ');
    session = await benchSession(dockerClient, IMAGE, N, VERSION, LIMITS, GAP_MS);
    console.log('done');

    process.stdout.write("resume: a removed sandbox's 100 MB state replayed ... ");
    resume = await benchResume(dockerClient, IMAGE, Math.max(3, Math.round(N / 6)), VERSION, LIMITS);
    Object.assign(results, resume.results);
    console.log('done');

    process.stdout.write('network: through the proxy and on a plain bridge ... ');
    network = await benchNetwork(dockerClient, IMAGE, N, VERSION, LIMITS);
    Object.assign(results, network.results);
    console.log('done');

    process.stdout.write('credentials: a bound host and an unbound one through the same proxy ... ');
    credentials = await benchCredentials(dockerClient, IMAGE, N, VERSION, LIMITS);
    Object.assign(results, credentials.results);
    console.log('done');

    process.stdout.write('load: 5 chats x 20 calls, 3 in flight per chat ... ');
    await Promise.all([warm.dispose(), plain.dispose()]);
    const loaded = makeProvider(true, { spareSandboxes: 1, maxSandboxes: 8, limits: LOAD_LIMITS });
    providers.push(loaded);
    await loaded.fillSpares();
    load = await loadCase(loaded, LOAD_LIMITS.memoryMb);
    console.log(`done (${load.failures.length} failed)`);
    // The same without parallel calls inside a chat: what is left is the chats' contention for the CPU.
    process.stdout.write('load: 5 chats x 20 calls, 1 in flight per chat ... ');
    loadSerial = await loadCase(loaded, LOAD_LIMITS.memoryMb, 5, 20, 1);
    console.log(`done (${loadSerial.failures.length} failed)`);
    // Three in flight again, with the timeouts and memory hogs replaced by print(1): the part of
    // the p95 that is waiting behind a chat's own slow calls, against the part that is the CPU.
    process.stdout.write('load: 5 chats x 20 quick calls (no timeouts, no memory hogs), 3 in flight per chat ... ');
    loadQuick = await loadCase(loaded, LOAD_LIMITS.memoryMb, 5, 20, 3, QUICK_MIX);
    console.log(`done (${loadQuick.failures.length} failed)\n`);

    process.stdout.write(`default data image${process.env.BENCH_BUILD === '1' ? ' (built from scratch)' : ''} ... `);
    dataImage = await benchDataImage(dockerClient, silentLogger, N, VERSION, LOAD_LIMITS);
    results['pandas.pipeline.warm.dataImage'] = dataImage.warmPandas;
    console.log('done\n');
  } finally {
    fs.rmSync(share, { force: true });
    await Promise.all(providers.map((p) => p.dispose()));
  }
  const runtimes = await measureRuntimes(
    dockerClient,
    { N, LIMITS, VERSION, PRINT1, PANDAS, pandasOut, runLimits: RUN_LIMITS, repeat, time, stat, docker, inside, expectText },
    IMAGE,
  );
  Object.assign(results, runtimes.results);
  notes.runtimes = runtimes.skipped ? `skipped: ${runtimes.skipped}` : `image ${runtimes.image}`;
  console.log(runtimes.skipped ? `runsc columns skipped: ${runtimes.skipped}\n` : `runtime columns measured on ${runtimes.image}\n`);

  const r = (k: string) => results[k]!.median;
  const mbps = (k: string) => SHARE_MB / (r(k) / 1000);
  const ratios = {
    'first call, no head start (spare), print(1) / warm print(1) (target <= 2)': r('first.print1.pipeline.spare') / r('print1.pipeline.warm'),
    'first call, no head start (spare), pandas / warm pandas (target <= 2)': r('first.pandas.pipeline.spare') / r('pandas.pipeline.warm'),
    'first call, no head start, no spare / warm print(1) (was ~40)': r('first.print1.pipeline.cold') / r('print1.pipeline.warm'),
    'warm print(1) / Jupyter kernel round trip (target <= 1.3)': r('print1.pipeline.warm') / r('print1.jupyterKernel'),
    'warm pandas / Jupyter kernel round trip (target <= 1.5)': r('pandas.pipeline.warm') / r('pandas.jupyterKernel'),
    [`warm print(1), ${GAP_MS} ms between calls / Jupyter kernel round trip (target <= 1.3)`]: r('print1.pipeline.warm.gap') / r('print1.jupyterKernel'),
    [`warm pandas, ${GAP_MS} ms between calls / Jupyter kernel round trip (target <= 1.5)`]: r('pandas.pipeline.warm.gap') / r('pandas.jupyterKernel'),
    'load: p95 warm print(1) under load / unloaded (target <= 3)': load!.latency.print!.p95 / results['print1.pipeline.warm']!.p95,
    'load, 1 in flight per chat: p95 print(1) / unloaded (no target)': loadSerial!.latency.print!.p95 / results['print1.pipeline.warm']!.p95,
    'load, quick calls only, 3 in flight: p95 print(1) / unloaded (no target)': loadQuick!.latency.print!.p95 / results['print1.pipeline.warm']!.p95,
    // The print(1) rows run before the chat's first pandas call: a chat that has not imported the
    // data stack, whose calls are forked from the bare interpreter (modules preloaded on use).
    [`warm print(1), ${GAP_MS} ms between calls / fork and exit of the bare interpreter (target <= 1.2)`]: r('print1.pipeline.warm.gap') / r('forkAndExit.bareInterpreter'),
    // A session's state holder is the chat's own interpreter: bare until a call imports more.
    'session call (print(x + 1)) / fork and exit of the bare interpreter (target <= 1.2)': session!.results['session.print(x+1)']!.median / r('forkAndExit.bareInterpreter'),
    // Below every call: the request's way in and the exit frame's way out on the engine's attach stream.
    [`the engine's attach stream, a byte there and back, ${GAP_MS} ms between / fork and exit of the bare interpreter (no target)`]: r('attach.roundTrip') / r('forkAndExit.bareInterpreter'),
    // With the part of the floor a call cannot make ahead (its process's exit): the least any call costs.
    [`that round trip and a process's exit and reaping after its fork / fork and exit of the bare interpreter (no target)`]: (r('attach.roundTrip') + r('afterFork.bareInterpreter')) / r('forkAndExit.bareInterpreter'),
    ...chats!.ratios,
    ...mcp!.ratios,
    ...card!.ratios,
    'warm print(1) / bare interpreter (target <= 2)': r('print1.pipeline.warm') / r('print1.bareInterpreter'),
    'warm print(1) / docker exec CLI (target < 1)': r('print1.pipeline.warm') / r('print1.dockerExecCli'),
    'warm pandas program / docker exec CLI (target <= 0.1)': r('pandas.pipeline.warm') / r('pandas.dockerExecCli'),
    'first call, prewarmed, print(1) / docker run (target <= 0.3)': r('first.print1.pipeline.prewarmed') / r('first.print1.dockerRun'),
    'first call, prewarmed, pandas / docker run (target <= 0.3)': r('first.pandas.pipeline.prewarmed') / r('first.pandas.dockerRun'),
    'first call, cold, print(1) / docker run (no target)': r('first.print1.pipeline.cold') / r('first.print1.dockerRun'),
    [`${SHARE_MB} MB share throughput / docker cp (target >= 1.0)`]: mbps('share.pipeline') / mbps('share.dockerCp'),
    [`${SHARE_MB} MB share, the copy alone / docker cp (no target)`]: mbps('share.copyIn') / mbps('share.dockerCp'),
    'CLI --help / node -e 0 (target <= 1.5)': r('cli.help') / r('cli.nodeStart'),
    'CLI --help / node -e 0, minor page faults (no target)': cliStart.faults.help / cliStart.faults.nodeStart,
    'CLI run of print(1) on a kept session / node -e 0 (target <= 3)': r('cli.run.warmSession') / r('cli.nodeStart'),
    'CLI run of print(1) on a kept session under runc / node -e 0 (target <= 3)': r('cli.run.warmSession.runc') / r('cli.nodeStart'),
    'CLI run of print(1) on a kept session in its own process (--keep-seconds 0) / node -e 0 (no target)': r('cli.run.warmSession.ownProcess') / r('cli.nodeStart'),
    'CLI run of print(1) on a kept session / node -e 0, minor page faults (no target)': cliRun!.faults.warmSession / cliStart.faults.nodeStart,
    'CLI run in a new session: from its result to its exit / node -e 0 (target <= 1)': r('cli.run.newSession.afterResult') / r('cli.nodeStart'),
    'CLI run of print(1) in a new session (a keeper waits with the spare) / on a kept session (target <= 1.3)': r('cli.run.newSession') / r('cli.run.warmSession'),
  };
  printTable('measurement', Object.entries(results));
  printTable(`warm print(1) on the runner channel, by phase (${GAP_MS} ms between calls, before the chat's first pandas call)`, Object.entries(plainPhases!));
  printTable(`warm print(1) on the runner channel, by phase (${GAP_MS} ms between calls, after the chat's pandas calls)`, Object.entries(phases!));
  console.log(`page faults of a warm print(1), ${GAP_MS} ms between calls, after the chat's pandas calls: ${describeFaults(warmFaults!)}`);
  for (const [k, f] of Object.entries(chats!.faults)) console.log(`page faults of a warm print(1), ${k.replace('.', ' chat, preloaded on ')}: ${describeFaults(f)}`);
  console.log('');
  for (const [l, what] of [[load!, ''], [loadSerial!, ''], [loadQuick!, ', quick calls only']] as const) {
    printTable(`load, ${l.inFlightPerChat} in flight per chat${what} (${l.calls} calls, wall ${(l.wallMs / 1000).toFixed(1)} s)`, Object.entries(l.latency) as [string, Stat][]);
    console.log(`${l.failures.length} failed calls${l.failures.length ? `: ${l.failures.slice(0, 5).join('; ')}` : ''}`);
    console.log(`throughput: ${describeThroughput(l.calls, l.wallMs, l.cpu)}\n`);
  }
  console.log(`idle chat sandbox ${load!.idleSandboxMb.toFixed(1)} MB; the whole set (${load!.sandboxes} sandboxes, spare included) ${load!.wholeSetMb.toFixed(1)} MB`);
  console.log(`\nshare throughput: pipeline ${mbps('share.pipeline').toFixed(0)} MB/s, its copy alone ${mbps('share.copyIn').toFixed(0)} MB/s, docker cp ${mbps('share.dockerCp').toFixed(0)} MB/s (medians)`);
  console.log(`Jupyter kernel start-up (once): ${notes.jupyterKernelStartupMs} ms; the first touch of a page: ${notes.pageTouchMicros} µs`);
  console.log(`minor page faults of one process: node -e 0 ${cliStart.faults.nodeStart}, CLI --help ${cliStart.faults.help}, CLI run on a kept session ${cliRun!.faults.warmSession}\n`);
  const d = dataImage!;
  console.log(
    `data image ${d.tag} (${d.route} route): ${d.builtFromScratch ? 'built from scratch' : 'found'} in ${(d.ensureMs / 1000).toFixed(1)} s, ${(d.sizeMb / 1000).toFixed(2)} GB; not measured: ${d.notMeasured.join('; ')}\n`,
  );
  printSession(session!);
  printResume(resume!);
  const rw = Math.max(...Object.keys(ratios).map((k) => k.length));
  for (const [k, v] of Object.entries(ratios)) console.log(`${k.padEnd(rw)}  ${v.toFixed(3)}`);
  for (const [k, v] of Object.entries(runtimes.ratios)) console.log(`${k.padEnd(rw)}  ${v.toFixed(2)}`);
  if (runtimes.heldBy) console.log(`runsc / runc of a data chat's warm print(1), ${RUNTIME_GAP_MS} ms between calls: the phase that holds it: ${runtimes.heldBy}`);
  if (runtimes.pandasOwn) console.log(`runsc / runc of a warm pandas call, ${RUNTIME_GAP_MS} ms between calls: ${runtimes.pandasOwn}`);
  if (runtimes.backToBack) console.log(`runsc / runc back to back: what holds it: ${runtimes.backToBack}`);
  for (const [kind, s] of Object.entries(runtimes.syscalls ?? {})) {
    const chat = kind === 'plain' ? 'a chat before it imports pandas' : 'a data chat';
    console.log(`syscalls of a warm print(1) on runc, ${chat}, ${RUNTIME_GAP_MS} ms between calls: ${typeof s === 'string' ? `not counted (${s})` : describeSyscalls(s)}`);
  }
  for (const [k, v] of Object.entries(network!.ratios)) console.log(`${k.padEnd(rw)}  ${v.toFixed(2)}`);
  for (const [k, v] of Object.entries(credentials!.ratios)) console.log(`${k.padEnd(rw)}  ${v.toFixed(2)}`);
  const cliRatio = r('cli.run.warmSession') / r('cli.nodeStart');
  const p = cliRun!.phases;
  console.log(
    `\nCLI run on a kept session (the default runtime), ${r('cli.run.warmSession').toFixed(0)} ms: starting Node ${p.nodeStart.toFixed(0)}, the session's keeper runs it ` +
      `${(r('cli.run.warmSession') - p.nodeStart).toFixed(0)}` +
      (cliRatio > 3 ? `; ${cliRatio.toFixed(2)} x node -e 0` : '') +
      `\nthe same run in its own process (--keep-seconds 0), ${r('cli.run.warmSession.ownProcess').toFixed(0)} ms: starting Node ${p.nodeStart.toFixed(0)}, loading the commands ${p.loadCommands.toFixed(0)}, ` +
      `finding the sandbox ${p.findSandbox.toFixed(0)}, the lock's exec ${p.lockExec.toFixed(0)} (asked for while the commands load), the call and the exit ${p.rest.toFixed(0)} (medians, each part alone); ` +
      `the phase that holds it: ${heaviestCliPhase(p, r('cli.run.warmSession.ownProcess'))}`,
  );
  // Each: the call, its ratio to its fork-and-exit floor, the floor's interpreter, its phases.
  const floors: [string, number, 'bare' | 'preloaded', Phases][] = [
    ["a data chat's warm print(1)", chats!.ratios[`data chat: warm print(1), ${GAP_MS} ms between calls / fork and exit of the preloaded interpreter (target <= 1.2)`]!, 'preloaded', phases!],
    ["a chat's warm print(1) before it imports pandas", ratios[`warm print(1), ${GAP_MS} ms between calls / fork and exit of the bare interpreter (target <= 1.2)`]!, 'bare', plainPhases!],
    ['a session call', ratios['session call (print(x + 1)) / fork and exit of the bare interpreter (target <= 1.2)'], 'bare', session!.phases],
  ];
  const attach = r('attach.roundTrip');
  for (const [what, ratio, interpreter, held] of floors) {
    if (ratio <= 1.2) continue;
    const floor = r(`forkAndExit.${interpreter}Interpreter`);
    // The least a call can cost: the request in and the reply out on the stream, and its
    // program's process ending (its fork was made ahead, in the idle time).
    const least = attach + r(`afterFork.${interpreter}Interpreter`);
    console.log(
      `\n${what} is ${ratio.toFixed(2)} x the fork-and-exit floor; the phase that holds it: ${heaviestPhase(held)}; ` +
        `below it all, the engine's attach stream alone, a byte there and back, ${attach.toFixed(2)} ms, is ${(attach / floor).toFixed(2)} x that floor, ` +
        `and with a process's exit and reaping after its fork, ${least.toFixed(2)} ms, the least a call through the stream can cost, ${(least / floor).toFixed(2)} x`,
    );
  }
  const out = path.join('test-results', 'bench');
  fs.mkdirSync(out, { recursive: true });
  const file = path.join(out, 'bench.json');
  fs.writeFileSync(file, JSON.stringify({ date: new Date().toISOString(), image: IMAGE, runs: N, machine, limits: LIMITS, results, phases, plainPhases, load, loadSerial, loadQuick, dataImage, session, cliStart, cliRun, warmFaults, syscalls: runtimes.syscalls, ratios: { ...ratios, ...runtimes.ratios, ...session!.ratios, ...resume!.ratios, ...network!.ratios, ...credentials!.ratios }, resumeRecordBytesPerStateMb: resume!.recordBytesPerStateMb, network, chats, mcp, card, notes }, null, 2) + '\n');
  console.log(`\nwritten to ${file}`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
