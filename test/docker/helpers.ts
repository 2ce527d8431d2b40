import * as path from 'node:path';
import * as fs from 'node:fs';
/**
 * Shared setup of the Docker integration tests. They talk to the real engine (never a mock),
 * label everything they create with a version label unique to this test process, and remove it
 * all again in an after() hook that then checks nothing of theirs is left.
 */
import * as assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type Dockerode from 'dockerode';
import { executeCode, type ExecuteReport } from '../../src/core/executeCode';
import { DEFAULTS, type RunLimits, type SandboxLimits } from '../../src/core/limits';
import type { Logger } from '../../src/core/logger';
import { createDockerClient } from '../../src/docker/engine/connection';
import { removeQuietly, type SandboxSpec } from '../../src/docker/container/spec';
import type { DockerSandbox } from '../../src/docker/sandbox/dockerSandbox';
import { DockerSandboxProvider, type ProviderOptions } from '../../src/docker/pool/dockerSandboxProvider';
import { processIsAlive } from '../../src/docker/pool/cleanup';
import { makersDir, makersEnded } from '../../src/cli/spareMaker';
import { LABEL, currentOwner, hasAllLabels, type Owner } from '../../src/docker/container/labels';

export const IMAGE = process.env.CODEACT_TEST_IMAGE || 'codeact-sandbox/python:bookworm';
/**
 * The runtime test sandboxes run under: unset, the engine's default (runc); CODEACT_TEST_RUNTIME=runsc
 * runs the same suites under gVisor (scripts/test.sh does, for the suites in .mocharc.docker-runsc.json).
 */
export const TEST_RUNTIME: string | undefined = process.env.CODEACT_TEST_RUNTIME || undefined;

/**
 * The one place a test's expectation depends on the runtime: where gVisor's own kernel answers
 * otherwise in a way that is harmless (an errno, a /proc detail) or that the code handles
 * (the whole sandbox ending with its memory limit). The README's "What differs under gVisor" says each.
 */
export function byRuntime<T>(expected: { runc: T; gvisor: T }): T {
  return TEST_RUNTIME === 'runsc' ? expected.gvisor : expected.runc;
}

/**
 * The engine the suites talk to: unset, Docker; CODEACT_TEST_ENGINE=podman runs the subset in
 * .mocharc.docker-podman.json against a Podman service (scripts/test.sh does, with DOCKER_HOST
 * pointing at it).
 */
export const TEST_ENGINE: 'docker' | 'podman' = process.env.CODEACT_TEST_ENGINE === 'podman' ? 'podman' : 'docker';

/**
 * The one place a test's expectation depends on the engine: where Podman reports or does a thing
 * otherwise (its inspect output, what `docker exec` adds). The README's "What differs under
 * Podman" says each that a program can notice.
 */
export function byEngine<T>(expected: { docker: T; podman: T }): T {
  return TEST_ENGINE === 'podman' ? expected.podman : expected.docker;
}

/** What the first call after a sandbox ended with its program gets (only under gVisor does a program end it). */
export const AFTER_SANDBOX_ENDED = (text: string) => byRuntime({ runc: text, gvisor: `${text}\n\n${SENTENCES.replaced}` });

/** The version label of everything this test process creates: how cleanup finds it. */
export const TEST_VERSION = `0.0.0-itest.${process.pid}.${randomBytes(3).toString('hex')}`;
export const TEST_LABEL = `${LABEL.version}=${TEST_VERSION}`;

/** Small limits so a test sandbox is cheap; tests that check limits pass their own. */
export const TEST_LIMITS: SandboxLimits = { memoryMb: 256, cpus: 1, pidsLimit: 128, workAreaMb: 64 };

export const docker: Dockerode = createDockerClient();
export const owner: Owner = currentOwner('cli', TEST_VERSION);

/** Set CODEACT_TEST_LOG=1 to see the pipeline's log on stderr. */
/** The last lines logged, whatever CODEACT_TEST_LOG says: a failing assertion can show them. */
const recent: string[] = [];
export function recentLog(n = 30): string {
  return recent.slice(-n).join('\n');
}
const line = (level: string) => (m: string) => {
  recent.push(`[${level}] ${m}`);
  if (recent.length > 200) recent.shift();
  if (process.env.CODEACT_TEST_LOG) process.stderr.write(`      [${level}] ${m}\n`);
};
export const log: Logger = { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') };

export const IMAGE_HINT = 'the setting codeactSandbox.image (integration test)';

export function runLimits(overrides: Partial<RunLimits> = {}): RunLimits {
  return {
    timeoutMs: 30_000,
    outputBudgetBytes: DEFAULTS.outputBudgetBytes,
    maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024,
    ...overrides,
  };
}

let counter = 0;
/** A session key no other test (or earlier run) uses. */
export function uniqueSessionKey(what = 'test'): string {
  return `itest:${process.pid}:${++counter}:${what}:${randomBytes(4).toString('hex')}`;
}

/** A sandbox spec as the suites use it: the test image, small limits, the test runtime. */
export function testSpec(overrides: Partial<SandboxSpec> = {}): SandboxSpec {
  return { image: IMAGE, limits: TEST_LIMITS, ...(TEST_RUNTIME ? { runtime: TEST_RUNTIME } : {}), ...overrides };
}

export interface ProviderOverrides {
  image?: string;
  limits?: Partial<SandboxLimits>;
  spec?: () => SandboxSpec;
  owner?: Owner;
  imageSettingHint?: string;
  idleMs?: number;
  /** Everything else of the provider's options (another engine client, CLI sharing, pre-warm and pull hooks). */
  options?: Partial<ProviderOptions>;
}

/** A provider like the CLI's (owner kind 'cli', no idle timer); the caller disposes it. */
export function newProvider(o: ProviderOverrides = {}): DockerSandboxProvider {
  const spec = testSpec({ ...(o.image ? { image: o.image } : {}), limits: { ...TEST_LIMITS, ...o.limits } });
  return new DockerSandboxProvider({
    docker,
    owner: o.owner ?? owner,
    spec: o.spec ?? (() => spec),
    imageSettingHint: o.imageSettingHint ?? IMAGE_HINT,
    log,
    idleMs: o.idleMs ?? 0,
    ...o.options,
  });
}

/** One execute_code call through the real pipeline. */
export function run(
  provider: DockerSandboxProvider,
  sessionKey: string,
  code: string,
  opts: { limits?: Partial<RunLimits>; memoryMb?: number; signal?: AbortSignal } = {},
): Promise<ExecuteReport> {
  return executeCode(
    provider,
    log,
    { code, sessionKey, ...(opts.memoryMb !== undefined ? { memoryMb: opts.memoryMb } : {}) },
    runLimits(opts.limits),
    opts.signal,
  );
}

export const execFileP = promisify(execFile);

/** `docker ...` through the real CLI (an independent view of the engine). */
export async function dockerCli(...args: string[]): Promise<string> {
  const { stdout } = await execFileP('docker', args, { maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

/** docker inspect's JSON: the tests check it field by field. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Inspected = Record<string, any>;

/** `docker inspect` of one object, parsed. */
export async function inspect(id: string, type: 'container' | 'volume' = 'container'): Promise<Inspected> {
  const [info] = JSON.parse(await dockerCli(type, 'inspect', id)) as Inspected[];
  return info!;
}

/**
 * Python lines (after `import ctypes`) that fake the program's exit report: the runner's shared
 * page is in the program's own address space, so a program may write it and go on.
 */
export const FORGE_EXIT_REPORT = [
  "pages = [l.split()[0] for l in open('/proc/self/maps') if ' rw-s ' in l]",
  'start, end = (int(x, 16) for x in pages[-1].split("-"))',
  'ctypes.c_uint32.from_address(start + 4).value = 0',
  'ctypes.c_uint32.from_address(start).value = 0x43584954',
];

/** A program that prints True when it is alone in its sandbox with PID 1 (the runner or keeper). */
export const ALONE_WITH_PID1 = "import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()) == [1, os.getpid()])";

/** Counts a sandbox's program processes (test/fixtures/program-processes.py says which count). */
const PROGRAM_PROCESSES = fs.readFileSync(path.join(__dirname, '../fixtures/program-processes.py'), 'utf8');

export async function programProcesses(container: string): Promise<number> {
  const count = PROGRAM_PROCESSES;
  const out = await dockerCli('exec', container, 'python3', '-c', count).catch(() => '0');
  return Number(out.trim());
}

/**
 * `docker top` of a sandbox as "PID COMMAND" lines, a view from outside the container. Docker runs
 * the host's ps (`-eo pid,args`); Podman would run a ps inside the container, which the image need
 * not have, unless the arguments are its own descriptors.
 */
export async function topOf(container: string): Promise<string> {
  return dockerCli('top', container, ...byEngine({ docker: ['-eo', 'pid,args'], podman: ['pid,args'] }));
}

export async function exists(id: string, type: 'container' | 'volume' = 'container'): Promise<boolean> {
  try {
    await execFileP('docker', [type, 'inspect', id]);
    return true;
  } catch {
    return false;
  }
}

/** Ids of containers (all states) matching every label filter. */
export async function containersWith(...labels: string[]): Promise<string[]> {
  const out = await dockerCli('ps', '-a', '-q', '--no-trunc', '--filter', `label=${LABEL.managed}`, ...labels.flatMap((l) => ['--filter', `label=${l}`]));
  return out.split('\n').filter(Boolean).sort();
}

/** Names of volumes matching every label filter (checked here too: Podman joins volume label filters with "or"). */
export async function volumesWith(...labels: string[]): Promise<string[]> {
  const all = [LABEL.managed, ...labels];
  const out = await dockerCli('volume', 'ls', '--format', '{{.Name}}\t{{.Labels}}', ...all.flatMap((l) => ['--filter', `label=${l}`]));
  return out
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split('\t') as [string, string?])
    .filter(([, text]) => hasAllLabels(Object.fromEntries((text ?? '').split(',').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])), all))
    .map(([name]) => name)
    .sort();
}

/** Names of networks matching every label filter (sandbox networks with an allow-list, the tests' own). */
export async function networksWith(...labels: string[]): Promise<string[]> {
  const out = await dockerCli('network', 'ls', '--format', '{{.Name}}', '--filter', `label=${LABEL.managed}`, ...labels.flatMap((l) => ['--filter', `label=${l}`]));
  return out.split('\n').filter(Boolean).sort();
}

/** Removes every container, volume and network labelled with this process's test version. */
export async function removeTestObjects(): Promise<void> {
  for (const id of await containersWith(TEST_LABEL)) await removeQuietly(docker, id, undefined, log);
  for (const v of await volumesWith(TEST_LABEL)) await removeQuietly(docker, undefined, v, log);
  for (const n of await networksWith(TEST_LABEL)) await docker.getNetwork(n).remove().catch(() => {});
}

export interface DockerTestContext {
  /** A provider that the suite's after() hook disposes. */
  makeProvider(o?: ProviderOverrides): DockerSandboxProvider;
}

/**
 * Call inside each top-level describe(): checks the image is there; afterwards disposes the
 * providers made through the returned context, removes whatever else carries this process's
 * test label, then checks that nothing of ours is left.
 */
export function useDocker(): DockerTestContext {
  const providers = new Set<DockerSandboxProvider>();
  before(async function () {
    this.timeout(30_000);
    try {
      await dockerCli('image', 'inspect', IMAGE);
    } catch {
      throw new Error(`test image ${IMAGE} is missing: run scripts/ensure-test-image.sh (or set CODEACT_TEST_IMAGE)`);
    }
  });
  after(async function () {
    this.timeout(60_000);
    const all = [...providers];
    providers.clear();
    await Promise.all(all.map((p) => p.dispose()));
    await removeTestObjects();
    assert.deepEqual(await containersWith(TEST_LABEL), [], 'containers left behind');
    assert.deepEqual(await volumesWith(TEST_LABEL), [], 'volumes left behind');
    assert.deepEqual(await networksWith(TEST_LABEL), [], 'networks left behind');
  });
  return {
    makeProvider(o?: ProviderOverrides) {
      const p = newProvider(o);
      providers.add(p);
      return p;
    },
  };
}

/** Lets time pass on purpose (a grace period a test is about); never a wait for something to happen. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * How long a test waits for something the product does in the background (a spare made, a
 * sandbox removed, a runner ready) before it fails. Generous on purpose: on a healthy machine the
 * condition, not this bound, ends the wait; a slow or loaded one (gVisor, two busy cores) may need it.
 */
export const WAIT_MS = 120_000;

/** The mocha timeout of a test that may wait WAIT_MS and still has work to do after. */
export const WAITING_TEST_MS = WAIT_MS + 60_000;

/**
 * Polls `condition` until it gives a value other than undefined or false, and resolves with that;
 * fails the test naming `what` (and the recent log) when `timeoutMs` passes first. For what the
 * product announces nowhere a test can listen (a container gone from the engine, a spare made).
 */
export async function waitFor<T>(
  condition: () => T | undefined | false | Promise<T | undefined | false>,
  what: string | (() => string),
  timeoutMs = WAIT_MS,
): Promise<T> {
  const giveUp = Date.now() + timeoutMs;
  for (;;) {
    const v = await condition();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > giveUp) {
      assert.fail(`waited ${timeoutMs / 1000} s for ${typeof what === 'string' ? what : what()}; log:\n${recentLog()}`);
    }
    await delay(100);
  }
}

/**
 * The session's sandbox once its warm runner is ready: created (when the session has none) without
 * running a program, then waited for until programs are forked from the runner. A new sandbox's
 * first call waits only briefly for its runner (RUNNER_READY_WAIT_MS in src/docker/run/warmStrategy.ts) and
 * otherwise runs by docker exec, so a test of what the runner does must wait for this signal first:
 * how soon a runner is ready depends on the machine. Fails the test when it never is.
 */
export async function warmSandbox(provider: DockerSandboxProvider, sessionKey: string, timeoutMs = WAIT_MS): Promise<DockerSandbox> {
  const lease = await provider.acquire(sessionKey, new AbortController().signal);
  await lease.release?.();
  const sandbox = provider.active.get(sessionKey);
  assert.ok(sandbox, `the provider holds no sandbox for ${sessionKey}`);
  if (!(await sandbox.warmedUp(timeoutMs))) {
    assert.fail(`the warm runner of ${sandbox.name} was not ready within ${timeoutMs / 1000} s (it is ${sandbox.runner?.state ?? 'absent'}); log:\n${recentLog()}`);
  }
  return sandbox;
}

/**
 * Resolves once what the session's sandbox queued after its last call is done: in session mode,
 * the runner's answer to forking the next program ahead (the signal a look between calls waits for).
 */
export async function settled(provider: DockerSandboxProvider, sessionKey: string): Promise<void> {
  const sandbox = provider.active.get(sessionKey);
  assert.ok(sandbox, `the provider holds no sandbox for ${sessionKey}`);
  await sandbox.between(async () => {});
}

/**
 * Kills, from outside, the process a session's holder forked ahead of the next call (as the OOM
 * killer could): the newest stopped process of the sandbox's user. Returns how many it killed. It
 * says so before the kill: the runner, hearing that process end, ends every process of the
 * sandbox's user, this one too (its exit status is then SIGKILL's).
 */
export async function killForkedAhead(container: string): Promise<number> {
  const script = [
    'import os',
    'stopped = []',
    "for p in os.listdir('/proc'):",
    '    if p.isdigit() and int(p) not in (1, os.getpid()):',
    '        try:',
    "            stat = open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()",
    "            mine = os.stat('/proc/%s' % p).st_uid == os.getuid()",
    '        except OSError:',
    '            continue  # gone meanwhile (a holder the last call replaced, going away)',
    "        if stat[0] == 'T' and mine:",
    '            stopped.append((int(stat[19]), int(p)))',
    'print(1 if len(stopped) > 1 else 0, flush=True)',
    'if len(stopped) > 1:',
    '    os.kill(max(stopped)[1], 9)',
  ].join('\n');
  const out = await dockerCli('exec', '-u', '65534:65534', container, 'python3', '-c', script).catch((e: { code?: number; stdout?: string }) => {
    if (e.code === 137 && e.stdout) return e.stdout;
    throw e;
  });
  return Number(out.trim());
}

/**
 * What a Python look run as the sandbox's user prints, or undefined when PID 1's sweep took it:
 * kill(-1) reaches every process of that user, a look from outside too (docker exec's 137).
 */
export async function lookAsSandboxUser(container: string, script: string): Promise<string | undefined> {
  return dockerCli('exec', '-u', '65534:65534', container, 'python3', '-c', script).then(
    (out) => out.trim(),
    (e: { code?: number }) => {
      if (e.code === 137) return undefined;
      throw e;
    },
  );
}

/**
 * A gate a test opens: `wait` is Python that blocks until then, so a call holds its sandbox (or
 * its place in the queue) for exactly as long as the test needs, however slow the machine. Each
 * gate has a file of its own in the sandbox's home, which `open` creates from outside.
 */
export function gate(): { wait: string; open(container: string): Promise<void> } {
  const file = JSON.stringify(`/sandbox/home/gate-${randomBytes(4).toString('hex')}`);
  return {
    wait: `import os as _os, time as _time\nwhile not _os.path.exists(${file}):\n    _time.sleep(0.05)`,
    open: async (container) => {
      await dockerCli('exec', container, 'python3', '-c', `open(${file}, 'w').close()`);
    },
  };
}

/** Resolves once a program runs in the sandbox (a process besides PID 1 and the child forked ahead). */
export function programRunning(container: string): Promise<true> {
  return waitFor(async () => (await programProcesses(container)) > 0, `a program to run in ${container.slice(0, 12)}`);
}

/** The helper's own view of the sentences a model gets (kept literal on purpose: a change must show up here). */
export const SENTENCES = {
  timeout: (s: number) =>
    `The program did not finish within ${s} s and was stopped. Make it faster, work on less data, or print partial results as you go.`,
  cancelled: 'The run was cancelled by the user and the program was stopped.',
  memory: (mb?: number) =>
    `The program was killed because it used more than the sandbox's ${mb !== undefined ? `${mb} MB ` : ''}memory limit. Process the data in smaller pieces.`,
  replaced: 'The sandbox had stopped and was replaced; files written by earlier calls are gone.',
  restarted: 'The sandbox had to be restarted to stop the program; files written by earlier calls are gone.',
  unreachable:
    'Docker is not reachable, so the program was not run. Ask the user to start Docker (Docker Desktop or the docker service) or to check the Docker connection settings, then try again.',
  imageUnavailable: (image: string, hint: string) =>
    `The sandbox image "${image}" is not on this machine and could not be pulled. Ask the user to pull it, or to set ${hint} to an image that has python3.`,
};

/**
 * The CLI bundled by esbuild.mjs itself (its two files: the options and the commands it loads on
 * demand), into a directory of the test's own so dist/ is left alone, and with this process's test
 * version so cleanup finds what it creates. Returns the path of its cli.js.
 */
export async function bundleCli(dir: string): Promise<string> {
  const root = path.join(__dirname, '../..');
  await execFileP(process.execPath, [path.join(root, 'esbuild.mjs'), '--cli-into', dir, '--version', TEST_VERSION], { cwd: root });
  return path.join(dir, 'cli.js');
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Runs a bundled CLI with node, feeding `stdin` and collecting both streams. A `run` may leave a
 * process making the next spare: unless `leaveMakers`, it is waited for too, so what a test
 * asserts next (and the hooks that clean up) find the engine settled.
 */
export async function spawnCli(cli: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; stdin?: string; leaveMakers?: boolean }): Promise<CliResult> {
  const started = Date.now();
  const result = await new Promise<CliResult>((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { cwd: opts.cwd, env: opts.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), ms: Date.now() - started }),
    );
    child.stdin.end(opts.stdin ?? '');
  });
  if (args[0] === 'run' && !opts.leaveMakers) await makersEnded(makersDir(opts.env), processIsAlive);
  return result;
}
