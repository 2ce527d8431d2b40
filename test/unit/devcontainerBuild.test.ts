import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ToolError } from '../../src/core/errors';
import type { Logger } from '../../src/core/logger';
import { BuildOutput, LOG_TAIL_LINES, checkDockerCli, devcontainerBuildCommand, runDevcontainerBuild } from '../../src/docker/devcontainer/buildCommand';
import { buildFailed } from '../../src/docker/devcontainer/buildErrors';
import { lineSplitter, nodeProcessHost, type OutputStream, type ProcessCommand, type ProcessExit, type ProcessHost, type ProcessRunOptions } from '../../src/docker/devcontainer/processHost';

function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const keep = (level: string) => (m: string) => lines.push(`[${level}] ${m}`);
  return { lines, debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') };
}

/** A host that plays back output lines and an exit, and records what it was asked to run. */
function fakeHost(lines: [string, OutputStream][], exit: ProcessExit): ProcessHost & { calls: { command: ProcessCommand; options: ProcessRunOptions }[] } {
  const calls: { command: ProcessCommand; options: ProcessRunOptions }[] = [];
  return {
    calls,
    async run(command, options) {
      calls.push({ command, options });
      for (const [l, s] of lines) options.onLine?.(l, s);
      if (exit.stopped) options.onStop?.(exit.stopped);
      return exit;
    },
  };
}

const BUILD_INPUT = {
  node: '/usr/bin/node',
  script: '/opt/cli/devContainersSpecCLI.js',
  workspaceFolder: '/work/my project; rm -rf ~',
  configFile: '/work/my project; rm -rf ~/.devcontainer/devcontainer.json',
  imageName: 'codeact-devcontainer/0123456789ab:build-abababababababab',
  dockerPath: 'docker',
  noCache: false,
  env: { DOCKER_HOST: 'tcp://build-box:2376', PATH: '/usr/bin' },
};

const FAILED = { relativeConfigFile: '.devcontainer/devcontainer.json', timeoutMs: 15 * 60_000, logHint: 'the CodeAct Sandbox output channel' };

describe('Dev Containers CLI command and output (unit)', () => {
  it('builds `devcontainer build` as an argv for the Node that runs the CLI, never a shell line', () => {
    assert.deepEqual(devcontainerBuildCommand(BUILD_INPUT), {
      file: '/usr/bin/node',
      args: [
        '/opt/cli/devContainersSpecCLI.js',
        'build',
        '--workspace-folder', path.resolve('/work/my project; rm -rf ~'),
        '--config', '/work/my project; rm -rf ~/.devcontainer/devcontainer.json',
        '--image-name', 'codeact-devcontainer/0123456789ab:build-abababababababab',
        '--docker-path', 'docker',
        '--no-lockfile',
        '--log-format', 'text',
      ],
      env: { DOCKER_HOST: 'tcp://build-box:2376', PATH: '/usr/bin', ELECTRON_RUN_AS_NODE: '1' },
    });
    assert.deepEqual(devcontainerBuildCommand({ ...BUILD_INPUT, noCache: true }).args.slice(-3), ['--log-format', 'text', '--no-cache']);
  });

  it('logs each line without colours, reports build steps as progress and keeps the JSON outcome out of the log', () => {
    const log = recordingLogger();
    const progress: string[] = [];
    const out = new BuildOutput({ log, onProgress: (m) => progress.push(m) });
    out.line('\x1b[1m#5 [2/3] RUN pip install -r requirements.txt\x1b[0m', 'stderr');
    out.line('Step 3/7 : RUN apt-get update', 'stdout');
    out.line(`Step 4/7 : RUN ${'x'.repeat(200)}`, 'stdout');
    out.line('   ', 'stdout');
    out.line('{"outcome":"success","imageName":["codeact-devcontainer/x:build-1"]}', 'stdout');
    out.line('{"on stderr": "an ordinary line"}', 'stderr');
    out.line('{ not json', 'stdout');
    assert.deepEqual(log.lines, [
      '[info] devcontainer build: #5 [2/3] RUN pip install -r requirements.txt',
      '[info] devcontainer build: Step 3/7 : RUN apt-get update',
      `[info] devcontainer build: Step 4/7 : RUN ${'x'.repeat(200)}`,
      '[info] devcontainer build: {"on stderr": "an ordinary line"}',
      '[info] devcontainer build: { not json',
    ]);
    assert.deepEqual(progress, ['#5 [2/3] RUN pip install -r requirements.txt', 'Step 3/7 : RUN apt-get update', `Step 4/7 : RUN ${'x'.repeat(105)}`]);
    assert.deepEqual(out.result({ code: 0, signal: null }), { outcome: 'success', tail: log.lines.map((l) => l.slice('[info] devcontainer build: '.length)) });
  });

  it("takes the CLI's own message as the detail of a failure, else the exit code or signal", () => {
    const log = recordingLogger();
    const out = new BuildOutput({ log });
    out.line('ERROR: process "/bin/sh -c false" did not complete successfully: exit code: 1', 'stderr');
    out.line('{"outcome":"error","message":"Command failed: docker build","description":"An error occurred building the image."}', 'stdout');
    assert.deepEqual(out.result({ code: 1, signal: null }), {
      outcome: 'error',
      detail: 'Command failed: docker build: An error occurred building the image.',
      tail: ['ERROR: process "/bin/sh -c false" did not complete successfully: exit code: 1', 'Command failed: docker build: An error occurred building the image.'],
    });
    assert.equal(log.lines.at(-1), '[info] devcontainer build: Command failed: docker build: An error occurred building the image.');

    assert.deepEqual(new BuildOutput({ log }).result({ code: 1, signal: null }), { outcome: 'error', detail: 'exit 1', tail: [] });
    assert.deepEqual(new BuildOutput({ log }).result({ code: null, signal: 'SIGKILL' }), { outcome: 'error', detail: 'exit SIGKILL', tail: [] });
    // Exit 0 without the success line is not a success: the image may not be there.
    assert.deepEqual(new BuildOutput({ log }).result({ code: 0, signal: null }), { outcome: 'error', detail: 'exit 0', tail: [] });
    // A field of the wrong type reads as absent.
    const odd = new BuildOutput({ log });
    odd.line('{"outcome":"error","message":42}', 'stdout');
    assert.deepEqual(odd.result({ code: 1, signal: null }), { outcome: 'error', detail: 'exit 1', tail: [] });
  });

  it('reports a stopped run as stopped, a process that did not start with its error, and keeps the last lines only', () => {
    const log = recordingLogger();
    const out = new BuildOutput({ log });
    for (let i = 0; i < 100; i++) out.line(`line ${i}`, 'stdout');
    assert.deepEqual(out.tail, Array.from({ length: LOG_TAIL_LINES }, (_, i) => `line ${100 - LOG_TAIL_LINES + i}`));
    assert.equal(out.result({ code: null, signal: 'SIGTERM', stopped: 'timeout' }).outcome, 'timeout');
    const enoent = Object.assign(new Error('spawn /no/node ENOENT'), { code: 'ENOENT' });
    assert.deepEqual(new BuildOutput({ log }).result({ code: null, signal: null, error: enoent }), { outcome: 'error', detail: 'Error (ENOENT): spawn /no/node ENOENT', tail: [] });
    assert.deepEqual(new BuildOutput({ log }).result({ code: null, signal: null, error: enoent, stopped: 'cancelled' }), {
      outcome: 'cancelled',
      detail: 'Error (ENOENT): spawn /no/node ENOENT',
      tail: [],
    });
  });

  it('runs the build on the host it is given, with the timeout and signal, and logs a stop', async () => {
    const log = recordingLogger();
    const host = fakeHost([['#3 [1/2] FROM base', 'stderr']], { code: null, signal: 'SIGTERM', stopped: 'timeout' });
    const command = devcontainerBuildCommand(BUILD_INPUT);
    const signal = new AbortController().signal;
    const progress: string[] = [];
    const result = await runDevcontainerBuild(host, command, { log, signal, timeoutMs: 4_000, onProgress: (m) => progress.push(m) });
    assert.deepEqual(result, { outcome: 'timeout', tail: ['#3 [1/2] FROM base'] });
    assert.equal(host.calls.length, 1);
    assert.equal(host.calls[0]!.command, command);
    assert.equal(host.calls[0]!.options.timeoutMs, 4_000);
    assert.equal(host.calls[0]!.options.signal, signal);
    assert.deepEqual(progress, ['#3 [1/2] FROM base']);
    assert.deepEqual(log.lines, ['[info] devcontainer build: #3 [1/2] FROM base', '[warn] stopping the Dev Container build (timeout)']);
  });

  it('checks the docker CLI with `docker --version` and says so when it is missing or the check is cancelled', async () => {
    const ok = fakeHost([['Docker version 27.5.1, build 9f9e405', 'stdout']], { code: 0, signal: null });
    await checkDockerCli(ok, '/opt/bin/docker', { PATH: '/usr/bin' }, undefined);
    assert.deepEqual(ok.calls[0]!.command, { file: '/opt/bin/docker', args: ['--version'], env: { PATH: '/usr/bin', ELECTRON_RUN_AS_NODE: '1' } });
    assert.equal(ok.calls[0]!.options.timeoutMs, 15_000);

    const missing =
      'The Dev Container image could not be built because the docker command-line tool was not found on the machine where the extension runs (the Dev Containers CLI needs it). Ask the user to install it (it comes with Docker Desktop and Docker Engine) and put it on the PATH the editor sees, or to switch the sandbox backend to docker.';
    const isMissing = (e: unknown) => e instanceof ToolError && e.code === 'build_failed' && e.modelMessage === missing;
    await assert.rejects(checkDockerCli(fakeHost([], { code: null, signal: null, error: Object.assign(new Error('spawn docker ENOENT'), { code: 'ENOENT' }) }), 'docker', {}, undefined), isMissing);
    await assert.rejects(checkDockerCli(fakeHost([], { code: 127, signal: null }), 'docker', {}, undefined), isMissing);
    await assert.rejects(checkDockerCli(fakeHost([], { code: null, signal: 'SIGTERM', stopped: 'timeout' }), 'docker', {}, undefined), isMissing);
    const abort = new AbortController();
    abort.abort();
    await assert.rejects(
      checkDockerCli(fakeHost([], { code: null, signal: null, stopped: 'cancelled' }), 'docker', {}, abort.signal),
      (e: unknown) => e instanceof ToolError && e.code === 'cancelled' && e.modelMessage === 'The Dev Container image build was cancelled, so the program was not run.',
    );
  });

  it('tells the model what failed: a timeout, a build that needed the network, any other failure', () => {
    const timeout = buildFailed({ outcome: 'timeout', tail: ['#7 [3/4] RUN sleep 1000'] }, FAILED);
    assert.equal(
      timeout.modelMessage,
      'The Dev Container image build did not finish within 15 minutes and was stopped, so the program was not run; the build log is in the CodeAct Sandbox output channel. Ask the user to check .devcontainer/devcontainer.json and its Dockerfile, or to switch the sandbox backend to docker.',
    );
    assert.equal((timeout.cause as Error).message, 'devcontainer build timeout\n#7 [3/4] RUN sleep 1000');

    const offline = buildFailed(
      { outcome: 'error', detail: 'Command failed: docker buildx build', tail: ['ERROR: failed to solve: python:3.12: failed to resolve source metadata: dial tcp: lookup registry: no such host'] },
      { ...FAILED, logHint: 'the log' },
    );
    assert.equal(
      offline.modelMessage,
      'The Dev Container image could not be built, so the program was not run; the build log is in the log. The build needed network access (a base image, a Dev Container Feature or a package download) and could not get it. Ask the user to fix .devcontainer/devcontainer.json (or its Dockerfile) and rebuild, or to switch the sandbox backend to docker.',
    );

    const plain = buildFailed({ outcome: 'error', detail: 'exit 1', tail: ['/bin/sh: 1: nope: not found', 'ERROR: exit code: 127'] }, FAILED);
    assert.equal(plain.code, 'build_failed');
    assert.equal(
      plain.modelMessage,
      'The Dev Container image could not be built, so the program was not run; the build log is in the CodeAct Sandbox output channel. Ask the user to fix .devcontainer/devcontainer.json (or its Dockerfile) and rebuild, or to switch the sandbox backend to docker.',
    );
    assert.equal((plain.cause as Error).message, 'devcontainer build error: exit 1\n/bin/sh: 1: nope: not found\nERROR: exit code: 127');
  });
});

describe('process host (unit)', function () {
  this.timeout(20_000);

  it('cuts output into lines at \\n, \\r\\n and a lone \\r, keeps split characters whole and flushes the last line', () => {
    const lines: string[] = [];
    const split = lineSplitter((l) => lines.push(l));
    const e = Buffer.from('é');
    split.push('a\r\nb');
    split.push('\rprogress 50%\rprogress 100%\n');
    split.push(Buffer.concat([Buffer.from('caf'), e.subarray(0, 1)]));
    split.push(Buffer.concat([e.subarray(1), Buffer.from('\nlast')]));
    split.end();
    assert.deepEqual(lines, ['a', 'b', 'progress 50%', 'progress 100%', 'café', 'last']);
  });

  const node = (code: string, ...args: string[]): ProcessCommand => ({ file: process.execPath, args: ['-e', code, ...args], env: process.env });
  const collect = () => {
    const lines: [string, OutputStream][] = [];
    return { lines, onLine: (l: string, s: OutputStream) => lines.push([l, s]) };
  };

  it('passes arguments as they are (no shell) and returns both streams and the exit code', async () => {
    const out = collect();
    const exit = await nodeProcessHost.run(node('console.log(process.argv[1]); console.error("to stderr"); process.exit(3)', 'a b; echo $HOME'), { timeoutMs: 10_000, onLine: out.onLine });
    assert.deepEqual(exit, { code: 3, signal: null });
    assert.deepEqual(out.lines, [
      ['a b; echo $HOME', 'stdout'],
      ['to stderr', 'stderr'],
    ]);
  });

  it('says when the program cannot be started, and starts nothing when already cancelled', async () => {
    const missing = await nodeProcessHost.run({ file: '/nonexistent/codeact-no-such-program', args: [], env: {} }, { timeoutMs: 10_000 });
    assert.equal((missing.error as { code?: string }).code, 'ENOENT');
    const abort = new AbortController();
    abort.abort();
    const stops: string[] = [];
    assert.deepEqual(await nodeProcessHost.run(node('require("fs").writeFileSync("/should-not-run", "")'), { timeoutMs: 10_000, signal: abort.signal, onStop: (w) => stops.push(w) }), {
      code: null,
      signal: null,
      stopped: 'cancelled',
    });
    assert.deepEqual(stops, ['cancelled']);
  });

  /** A program whose child (same process group, holding the output pipe) prints its pid and sleeps. */
  const parentOfSleeper = node(
    'const c = require("child_process").spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "inherit" }); console.log(c.pid); setInterval(() => {}, 1000)',
  );
  /**
   * Running (a zombie waiting for its reaper counts as gone), polled: the reaper is not instant.
   * Gives up by the clock (5 s, within mocha's 10 s), not after a count of polls.
   */
  const stillRuns = async (pid: number) => {
    for (const giveUp = Date.now() + 5_000; Date.now() < giveUp; ) {
      let state: string | undefined;
      try {
        process.kill(pid, 0);
        state = fs.existsSync(`/proc/${pid}/stat`) ? fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] : 'R';
      } catch {
        return false;
      }
      if (state === 'Z') return false;
      await new Promise((r) => setTimeout(r, 100));
    }
    return true;
  };

  // Should the host miss a grandchild, it keeps the pipe open and the test times out; it is killed
  // here so that the failure does not also hang the run.
  const sleepers: number[] = [];
  afterEach(() => {
    for (const pid of sleepers.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone, as it should be
      }
    }
  });

  it('stops the whole process tree at the timeout', async function () {
    if (process.platform === 'win32') this.skip();
    const stops: string[] = [];
    let grandchild = 0;
    const started = Date.now();
    const exit = await nodeProcessHost.run(parentOfSleeper, {
      timeoutMs: 1_000,
      onLine: (l) => sleepers.push((grandchild = Number(l))),
      onStop: (w) => stops.push(w),
    });
    assert.equal(exit.stopped, 'timeout');
    assert.equal(exit.signal, 'SIGTERM');
    assert.deepEqual(stops, ['timeout']);
    assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started} ms`);
    assert.ok(grandchild > 0);
    assert.equal(await stillRuns(grandchild), false, 'the child of the stopped program still runs');
  });

  it('stops the whole process tree when cancelled', async function () {
    if (process.platform === 'win32') this.skip();
    const abort = new AbortController();
    let grandchild = 0;
    const exit = await nodeProcessHost.run(parentOfSleeper, {
      timeoutMs: 10_000,
      signal: abort.signal,
      onLine: (l) => {
        sleepers.push((grandchild = Number(l)));
        abort.abort();
      },
    });
    assert.equal(exit.stopped, 'cancelled');
    assert.ok(grandchild > 0);
    assert.equal(await stillRuns(grandchild), false, 'the child of the stopped program still runs');
  });
});
