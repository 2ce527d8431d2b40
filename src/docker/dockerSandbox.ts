import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type Dockerode from 'dockerode';
import { ToolError } from '../core/errors';
import type { FilesOutCaps, SandboxLimits } from '../core/limits';
import type { Logger } from '../core/logger';
import type { CollectOutcome, OutputSink, ProgramExit, ProgramRun, Sandbox } from '../core/sandbox';
import { archiveOf } from './archive';
import { collectFiles, runArchive } from './transfer';
import { engineUnreachable, isUnreachable, statusCode, withDeadline } from './engineErrors';
import {
  KEEPER_SOURCE,
  KILL_ALL_SOURCE,
  PROGRAM_NAME,
  RUNS_DIR,
  SANDBOX_GID,
  SANDBOX_UID,
  WORK_ROOT,
  sandboxEnv,
} from './guest';
import { LABEL, ownerLabels, type Owner } from './labels';
import { RunnerChannel, runnerCommand, type RunnerOutcome } from './runner';
import { DEFAULTS } from '../core/limits';
import { MAX_DATA_PAYLOAD } from '../core/runnerProtocol';

export interface SandboxSpec {
  image: string;
  limits: SandboxLimits;
  /** PID 1 is the warm runner and programs are forked from it (default true); false: `docker exec` only. */
  warmRunner?: boolean;
  /** Modules the runner imports before the first program (those the image lacks are skipped). */
  preloadModules?: readonly string[];
}

/** The container's command: the warm runner, or the plain keeper. */
function commandOf(spec: SandboxSpec): string[] {
  return spec.warmRunner === false ? ['python3', '-c', KEEPER_SOURCE] : runnerCommand(spec.preloadModules ?? DEFAULTS.preloadModules);
}

const USER = `${SANDBOX_UID}:${SANDBOX_GID}`;
/** Management calls (create, start, put) are quick on a healthy engine; a hung one must not hang the chat. */
const API_DEADLINE_MS = 30_000;
/** After asking the program to die, how long before the whole sandbox is restarted instead. */
const KILL_GRACE_MS = 3_000;
/** How long one kill may take to end the program's output before it is tried again. */
const KILL_RETRY_MS = 500;
/** After the program's own process exited, how long its leftover children may keep the output open. */
const ORPHAN_GRACE_MS = 1_000;
/**
 * How long a call waits for a runner that is still starting (importing its preload modules)
 * before it uses docker exec instead. Short: a fresh `python3` costs less than waiting for a
 * preload it may not need, and the runner goes on warming for the next call.
 */
const RUNNER_READY_WAIT_MS = 300;
/** How long a runner whose channel failed has to answer a new hello before the sandbox is restarted. */
const RUNNER_REPAIR_WAIT_MS = 5_000;

/**
 * The container's hardening, in one place so every backend and every test sees the same thing.
 * `imageVolumes` are the VOLUME paths the image declares (Dev Container images may): Docker would
 * give each a writable anonymous volume on the host's disk, outside the size-bounded work area,
 * so each is covered by an empty read-only tmpfs instead.
 */
export function hardenedHostConfig(volumeName: string, limits: SandboxLimits, imageVolumes: readonly string[] = []): Dockerode.HostConfig {
  return {
    NetworkMode: 'none',
    ReadonlyRootfs: true,
    CapDrop: ['ALL'],
    SecurityOpt: ['no-new-privileges'],
    Memory: limits.memoryMb * 1024 * 1024,
    // Equal to Memory: no swap, so the memory limit is the limit.
    MemorySwap: limits.memoryMb * 1024 * 1024,
    NanoCpus: Math.round(limits.cpus * 1e9),
    PidsLimit: limits.pidsLimit,
    // The work area is a size-bounded tmpfs volume owned by the sandbox user: no host path is mounted.
    Mounts: [
      { Type: 'volume', Source: volumeName, Target: WORK_ROOT, ReadOnly: false },
      ...imageVolumes.map((Target) => ({ Type: 'tmpfs' as const, Source: '', Target, ReadOnly: true, TmpfsOptions: { SizeBytes: 1024 * 1024, Mode: 0o755 } })),
    ],
    IpcMode: 'private',
    ShmSize: 64 * 1024 * 1024,
    Ulimits: [{ Name: 'core', Soft: 0, Hard: 0 }],
    RestartPolicy: { Name: 'no' },
    AutoRemove: false,
  };
}

/**
 * One session's sandbox: a hardened, long-lived container whose PID 1 only waits, plus a tmpfs
 * volume as its work area. Each program gets a fresh directory under /sandbox/runs and is started
 * with a fixed argv by `docker exec`. Calls on one sandbox are serialized.
 */
export class DockerSandbox implements Sandbox {
  private queue: Promise<unknown> = Promise.resolve();
  private runCount = 0;
  private warmRuns = 0;
  private runner: RunnerChannel | undefined;
  private busyCount = 0;
  lastUsed = Date.now();

  private constructor(
    private readonly docker: Dockerode,
    readonly id: string,
    readonly name: string,
    readonly volumeName: string,
    readonly spec: SandboxSpec,
    private readonly log: Logger,
  ) {}

  get image(): string {
    return this.spec.image;
  }

  get busy(): boolean {
    return this.busyCount > 0;
  }

  static async create(
    docker: Dockerode,
    spec: SandboxSpec,
    owner: Owner,
    sessionDigest: string,
    log: Logger,
  ): Promise<DockerSandbox> {
    const suffix = randomBytes(3).toString('hex');
    const name = `codeact-${sessionDigest.slice(0, 12)}-${suffix}`;
    const labels = ownerLabels(owner, sessionDigest);
    let containerId: string | undefined;
    try {
      await withDeadline(
        docker.createVolume({
          Name: name,
          Driver: 'local',
          DriverOpts: {
            type: 'tmpfs',
            device: 'tmpfs',
            o: `size=${spec.limits.workAreaMb}m,uid=${SANDBOX_UID},gid=${SANDBOX_GID},mode=0700`,
          },
          Labels: labels,
        }),
        API_DEADLINE_MS,
        'create volume',
      );
      const imageVolumes = await declaredVolumes(docker, spec.image);
      const container = await withDeadline(
        docker.createContainer({
          name,
          Image: spec.image,
          // Reset any entrypoint the image declares: PID 1 is our keeper, nothing else.
          Entrypoint: [''],
          // Nor does a HEALTHCHECK of the image run commands in the sandbox.
          Healthcheck: { Test: ['NONE'] },
          Cmd: commandOf(spec),
          // The runner's channel is PID 1's stdin and stdout (the attach stream). It is never
          // logged: programs' output passes through it.
          ...(spec.warmRunner === false ? {} : { OpenStdin: true, StdinOnce: false }),
          User: USER,
          WorkingDir: WORK_ROOT,
          Env: sandboxEnv(),
          Labels: labels,
          NetworkDisabled: true,
          HostConfig: {
            ...hardenedHostConfig(name, spec.limits, imageVolumes),
            ...(spec.warmRunner === false ? {} : { LogConfig: { Type: 'none', Config: {} } }),
          },
        }),
        API_DEADLINE_MS,
        'create container',
      );
      containerId = container.id;
      const sandbox = new DockerSandbox(docker, container.id, name, name, spec, log);
      await sandbox.start();
      log.info(`sandbox ${name} created from ${spec.image} for session ${sessionDigest}`);
      return sandbox;
    } catch (e) {
      await removeQuietly(docker, containerId, name, log);
      if (e instanceof ToolError) throw e;
      if (isUnreachable(e)) throw engineUnreachable(e);
      const message = String((e as Error)?.message ?? e);
      if (/executable file not found|no such file or directory/i.test(message)) {
        throw new ToolError(
          'image_unavailable',
          `The sandbox image "${spec.image}" has no python3 on its PATH. Ask the user to choose an image with Python 3.`,
          { cause: e },
        );
      }
      throw new ToolError('sandbox_failed', 'The sandbox could not be created. Ask the user to check the "CodeAct Sandbox" output channel.', {
        cause: e,
      });
    }
  }

  /**
   * Re-attaches to a sandbox created by an earlier process (CLI --session). Returns undefined
   * when the container does not match the wanted spec or cannot be brought back to running.
   */
  static async attach(docker: Dockerode, containerId: string, spec: SandboxSpec, log: Logger): Promise<DockerSandbox | undefined> {
    try {
      const info = await withDeadline(docker.getContainer(containerId).inspect(), API_DEADLINE_MS, 'inspect container');
      const volume = info.Mounts?.find((m) => m.Destination === WORK_ROOT)?.Name;
      const h = info.HostConfig;
      const matches =
        info.Config.Image === spec.image &&
        h.Memory === spec.limits.memoryMb * 1024 * 1024 &&
        h.NanoCpus === Math.round(spec.limits.cpus * 1e9) &&
        h.PidsLimit === spec.limits.pidsLimit &&
        JSON.stringify(info.Config.Cmd) === JSON.stringify(commandOf(spec)) &&
        volume !== undefined;
      if (!matches) return undefined;
      const sandbox = new DockerSandbox(docker, info.Id, info.Name.replace(/^\//, ''), volume, spec, log);
      if (!info.State.Running) await sandbox.start();
      else await sandbox.connectRunner();
      return sandbox;
    } catch (e) {
      log.warn(`could not re-attach to ${containerId}: ${String((e as Error)?.message ?? e)}`);
      return undefined;
    }
  }

  private get container(): Dockerode.Container {
    return this.docker.getContainer(this.id);
  }

  /** Starts the container and lays out the work area (a tmpfs: empty after every start). */
  private async start(): Promise<void> {
    // Attached before the start, so nothing the runner says is missed.
    await this.openRunner();
    await withDeadline(this.container.start(), API_DEADLINE_MS, 'start container');
    // The runner preloads while the work area is laid out and the first program is copied in.
    this.runner?.greet();
    await withDeadline(
      this.container.putArchive(
        archiveOf([
          { type: 'directory', name: 'home' },
          { type: 'directory', name: 'tmp' },
          { type: 'directory', name: 'runs' },
        ]),
        { path: WORK_ROOT },
      ),
      API_DEADLINE_MS,
      'prepare work area',
    );
  }

  /** Kill everything and start again: the way out when the program cannot be stopped from inside. */
  private async restart(): Promise<void> {
    try {
      await withDeadline(this.container.kill({ signal: 'SIGKILL' }), API_DEADLINE_MS, 'kill container');
    } catch (e) {
      if (statusCode(e) !== 409) throw e; // 409: it was not running
    }
    await withDeadline(this.container.wait({ condition: 'not-running' }), API_DEADLINE_MS, 'wait for container').catch(() => {});
    await this.start();
  }

  run(run: ProgramRun): Promise<ProgramExit> {
    this.busyCount++;
    const next = this.queue.then(() => this.runNow(run));
    this.queue = next.catch(() => {});
    return next.finally(() => {
      this.busyCount--;
      this.lastUsed = Date.now();
    });
  }

  private async runNow(run: ProgramRun): Promise<ProgramExit> {
    if (run.signal.aborted) return { exitCode: null, workDir: '' };
    const callId = `${String(++this.runCount).padStart(4, '0')}-${randomBytes(3).toString('hex')}`;
    const workDir = `${RUNS_DIR}/${callId}`;
    const notes: string[] = [];
    // The fast path: the warm runner writes the program itself when no files are shared (one
    // round trip instead of an archive upload) and runs it in a child forked from a warm interpreter.
    const runner = await this.runnerReady(run.signal, notes);
    let laidOut = false;
    if (runner && !run.files?.length) {
      const warm = await this.runWarm(runner, workDir, run, Buffer.from(run.code, 'utf8'));
      if ('exit' in warm) return { ...warm.exit, workDir, ...(notes.length || warm.exit.notes ? { notes: [...notes, ...(warm.exit.notes ?? [])] } : {}) };
      laidOut = warm.written;
    }
    if (run.signal.aborted) return { exitCode: null, workDir, ...(notes.length ? { notes } : {}) };
    try {
      if (!laidOut) await this.putRunFiles(callId, run);
    } catch (e) {
      if (!/no space left/i.test(String((e as Error)?.message))) throw this.translate(e);
      // The work area is full of earlier calls' files: start the sandbox afresh rather than fail.
      this.log.warn(`sandbox ${this.name}: work area full, restarting it`);
      await this.restart().catch((err: unknown) => {
        throw this.translate(err);
      });
      await this.putRunFiles(callId, run).catch((err: unknown) => {
        if (/no space left/i.test(String((err as Error)?.message))) {
          const mb = Math.ceil(((run.files ?? []).reduce((t, f) => t + f.size, 0) + Buffer.byteLength(run.code)) / (1024 * 1024));
          throw new ToolError(
            'invalid_input',
            `The shared files and the program (${mb} MB) do not fit the sandbox's work area (${this.spec.limits.workAreaMb} MB). Share fewer or smaller files, or ask the user to make the work area larger.`,
            { cause: err },
          );
        }
        throw this.translate(err);
      });
      notes.push(
        `The sandbox's work area (${this.spec.limits.workAreaMb} MB) was full, so it was reset before this run; files written by earlier calls are gone.`,
      );
    }
    // Stopped while the program was being copied in: do not start it at all.
    if (run.signal.aborted) return { exitCode: null, workDir, ...(notes.length ? { notes } : {}) };
    const exit = laidOut ? await this.plainExec(workDir, run) : await this.exec(workDir, run);
    const allNotes = [...notes, ...(exit.notes ?? [])];
    return { ...exit, workDir, ...(allNotes.length ? { notes: allNotes } : {}) };
  }

  private async putRunFiles(callId: string, run: ProgramRun): Promise<void> {
    await withDeadline(
      this.container.putArchive(runArchive(`runs/${callId}`, run.code, run.files ?? []), { path: WORK_ROOT }),
      // Shared files can be large; the deadline guards a hung engine, not a slow disk.
      API_DEADLINE_MS + (run.files ?? []).reduce((t, f) => t + f.size, 0) / 10_000,
      'copy the program into the sandbox',
    );
  }

  /**
   * Collects produced files by literal path. Runs after the call's program (serialized with
   * runs), and first stops anything it left running, so no process changes a file while it is
   * checked and read.
   */
  collect(workDir: string, names: readonly string[], caps: FilesOutCaps, sink: OutputSink): Promise<CollectOutcome> {
    const next = this.queue.then(async () => {
      await this.killLeftovers();
      try {
        return await collectFiles(this.container, workDir, names, caps, sink);
      } catch (e) {
        throw this.translate(e);
      }
    });
    this.queue = next.catch(() => {});
    return next;
  }

  private async killLeftovers(): Promise<void> {
    try {
      const s = await this.startKiller(KILL_GRACE_MS);
      await new Promise<void>((resolve) => {
        s.on('end', resolve);
        s.on('close', resolve);
        s.on('error', () => resolve());
        s.resume();
      });
    } catch (e) {
      // A fork bomb may leave no room for the killer; the stats and tar checks still hold.
      this.log.warn(`sandbox ${this.name}: could not stop leftover processes before collecting (${String((e as Error)?.message ?? e)})`);
    }
  }

  /** Starts `kill(-1)` as the sandbox user (every process but PID 1); returns its output stream. */
  private async startKiller(deadlineMs: number): Promise<NodeJS.ReadableStream> {
    const giveUp = Date.now() + deadlineMs;
    const killer = await withDeadline(
      this.container.exec({ Cmd: ['python3', '-c', KILL_ALL_SOURCE], User: USER, AttachStdout: true, AttachStderr: true }),
      Math.max(1, giveUp - Date.now()),
      'create kill exec',
    );
    return (await withDeadline(killer.start({ hijack: true, stdin: false }), Math.max(1, giveUp - Date.now()), 'start kill exec')) as NodeJS.ReadableStream;
  }


  private translate(e: unknown): Error {
    if (e instanceof ToolError) return e;
    if (isUnreachable(e)) return engineUnreachable(e);
    const status = statusCode(e);
    if (status === 404 || status === 409) {
      return Object.assign(new Error('sandbox container is gone or stopped', { cause: e }), { sandboxGone: true });
    }
    return e instanceof Error ? e : new Error(String(e));
  }

  /** Runs a program already in its directory: by the runner when it is ready, else by `docker exec`. */
  private async exec(workDir: string, run: ProgramRun): Promise<Omit<ProgramExit, 'workDir'>> {
    const runner = this.runner?.state === 'ready' ? this.runner : undefined;
    if (runner) {
      const warm = await this.runWarm(runner, workDir, run);
      if ('exit' in warm) return warm.exit;
      if (run.signal.aborted) return { exitCode: null };
    }
    return this.plainExec(workDir, run);
  }

  /**
   * Opens the channel to the runner (PID 1 of a warm sandbox). Without one, or when the runner
   * says it cannot work in this image, programs are started by `docker exec`.
   */
  private async openRunner(): Promise<void> {
    this.runner?.close();
    this.runner = undefined;
    if (this.spec.warmRunner === false) return;
    try {
      this.runner = await withDeadline(RunnerChannel.open(this.docker, this.container, this.name, this.log), API_DEADLINE_MS, 'attach to the runner');
    } catch (e) {
      this.log.warn(`sandbox ${this.name}: cannot attach to the runner (${String((e as Error)?.message ?? e)}); programs run by docker exec`);
    }
  }

  /** Resolves once programs are forked from the warm runner; false when they will run by docker exec. */
  warmedUp(timeoutMs = RUNNER_READY_WAIT_MS): Promise<boolean> {
    const runner = this.runner;
    return runner ? runner.whenReady(timeoutMs, new AbortController().signal) : Promise.resolve(false);
  }

  /** For a sandbox found running (CLI --session): attach to its runner and greet it. */
  async connectRunner(): Promise<void> {
    await this.openRunner();
    this.runner?.greet();
  }

  /**
   * The runner when it can take a program now: waits for a starting runner (it preloads), and
   * repairs a channel that failed: attaches again, and when the runner does not answer, restarts
   * the sandbox (the note says so).
   */
  private async runnerReady(signal: AbortSignal, notes: string[]): Promise<RunnerChannel | undefined> {
    // No channel at all (attaching failed): docker exec, as without the runner.
    if (this.spec.warmRunner === false || !this.runner) return undefined;
    if (this.runner.state === 'broken') {
      // A stopped container is the provider's to replace (as a failed docker exec would say).
      if (!(await this.isAlive())) throw Object.assign(new Error('sandbox container is not running'), { sandboxGone: true });
      this.log.info(`sandbox ${this.name}: reconnecting to the runner (${this.runner?.reason ?? 'not connected'})`);
      await this.connectRunner();
      const fresh = this.runner as RunnerChannel | undefined;
      if (!fresh || !(await fresh.whenReady(RUNNER_REPAIR_WAIT_MS, signal))) {
        if (signal.aborted || fresh?.state === 'unusable') return undefined;
        this.log.warn(`sandbox ${this.name}: the runner does not answer; restarting the sandbox`);
        try {
          await this.restart();
        } catch (e) {
          throw this.translate(e);
        }
        notes.push("The sandbox's runner stopped answering, so the sandbox was restarted; files written by earlier calls are gone.");
      }
    }
    const runner = this.runner;
    if (!runner) return undefined;
    // Just restarted for the runner's sake: give it the time to come up.
    const wait = notes.length ? RUNNER_REPAIR_WAIT_MS : RUNNER_READY_WAIT_MS;
    return (await runner.whenReady(wait, signal)) ? runner : undefined;
  }

  /**
   * One program through the runner. `code` set: the runner writes program.py itself. The result
   * is the program's exit, or (when the runner did not start it) whether program.py is in place
   * for the plain path. A channel that fails while the program runs ends in a restart.
   */
  private async runWarm(
    runner: RunnerChannel,
    workDir: string,
    run: ProgramRun,
    code?: Buffer,
  ): Promise<{ exit: Omit<ProgramExit, 'workDir'> } | { written: boolean }> {
    const outcome: RunnerOutcome = await runner.run(
      ++this.warmRuns,
      // The host stops a flood first (executeCode's maxOutputBytes); this is the runner's own backstop.
      { dir: workDir, ...(code ? { code } : {}), maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024 + MAX_DATA_PAYLOAD, orphanGraceMs: ORPHAN_GRACE_MS },
      { onStdout: (c) => run.onStdout(c), onStderr: (c) => run.onStderr(c) },
      run.signal,
      KILL_GRACE_MS,
    );
    switch (outcome.kind) {
      case 'exit':
        if (outcome.orphans) this.log.info(`sandbox ${this.name}: program exited but left processes holding its output; they were stopped`);
        return { exit: { exitCode: run.signal.aborted ? null : outcome.exitCode } };
      case 'declined':
        this.log.info(`sandbox ${this.name}: the runner left ${workDir} to docker exec (${outcome.reason})`);
        return { written: code ? outcome.written : true };
      case 'failed':
        if (!outcome.started) {
          this.log.warn(`sandbox ${this.name}: the runner failed before the program started (${outcome.error.message}); using docker exec`);
          return { written: !code };
        }
    }
    // The program started and the channel failed: the container died (its PID 1 is the runner),
    // or the runner cannot be trusted any more. Either way nothing more of the run can be had.
    const state = await withDeadline(this.container.inspect(), API_DEADLINE_MS, 'inspect container').then(
      (info) => info.State,
      () => undefined,
    );
    if (!state?.Running) {
      // Not run again (it may have done half its work): the next call replaces the sandbox.
      this.log.warn(`sandbox ${this.name}: stopped while the program ran (${state?.OOMKilled ? 'out of memory' : 'killed'})`);
      if (state?.OOMKilled) return { exit: { exitCode: 137 } };
      return { exit: { exitCode: null, notes: ['The sandbox stopped while the program ran (it was stopped from outside); the next call gets a new one.'] } };
    }
    this.log.warn(`sandbox ${this.name}: the runner failed while the program ran (${outcome.error.message}); restarting the sandbox`);
    try {
      await this.restart();
    } catch (e) {
      throw this.translate(e);
    }
    return { exit: { exitCode: null, replaced: true } };
  }

  private async plainExec(workDir: string, run: ProgramRun): Promise<Omit<ProgramExit, 'workDir'>> {
    let exec: Dockerode.Exec;
    let stream: NodeJS.ReadWriteStream;
    try {
      exec = await withDeadline(
        this.container.exec({
          // A fixed argv: the program is a file, never part of a command line.
          Cmd: ['python3', `${workDir}/${PROGRAM_NAME}`],
          WorkingDir: workDir,
          User: USER,
          AttachStdin: false,
          AttachStdout: true,
          AttachStderr: true,
          Tty: false,
        }),
        API_DEADLINE_MS,
        'create exec',
      );
      stream = (await withDeadline(exec.start({ hijack: true, stdin: false }), API_DEADLINE_MS, 'start exec')) as NodeJS.ReadWriteStream;
    } catch (e) {
      throw this.translate(e);
    }

    const ended = new Promise<void>((resolve, reject) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', reject);
    });
    const sink = (deliver: (chunk: Buffer) => void) =>
      new Writable({
        write(chunk: Buffer, _enc, done) {
          deliver(chunk);
          done();
        },
      });
    this.docker.modem.demuxStream(stream, sink(run.onStdout), sink(run.onStderr));

    let replaced = false;
    let stopping: Promise<void> | undefined;
    const stop = () => {
      stopping ??= this.stopProgram(ended).then((r) => {
        replaced = r;
      });
      return stopping;
    };
    const onAbort = () => void stop();
    run.signal.addEventListener('abort', onAbort, { once: true });
    // An abort that came while the exec was being created and started fired no event: stop now.
    if (run.signal.aborted) void stop();
    // A program whose children outlive it keeps the output open; once its own process is gone,
    // give them a moment, then stop them so the call returns.
    const watcher = this.watchForOrphans(exec, ended, stop);
    try {
      await ended;
    } catch (e) {
      if (!run.signal.aborted) throw this.translate(e);
    } finally {
      run.signal.removeEventListener('abort', onAbort);
      watcher.cancel();
    }
    if (stopping) await stopping;
    if (run.signal.aborted) return { exitCode: null, ...(replaced ? { replaced } : {}) };
    return { exitCode: await this.exitCodeOf(exec) };
  }

  private watchForOrphans(exec: Dockerode.Exec, ended: Promise<void>, stop: () => Promise<void>): { cancel(): void } {
    let cancelled = false;
    let timer: NodeJS.Timeout | undefined;
    const tick = async () => {
      if (cancelled) return;
      const info = await exec.inspect().catch(() => undefined);
      if (cancelled) return;
      if (info && !info.Running) {
        const done = await Promise.race([ended.then(() => true, () => true), delay(ORPHAN_GRACE_MS).then(() => false)]);
        if (!done && !cancelled) {
          this.log.info(`sandbox ${this.name}: program exited but left processes holding its output; stopping them`);
          await stop();
        }
        return;
      }
      timer = setTimeout(() => void tick(), 500);
    };
    // Short programs end before the first check; only longer ones pay for polling.
    timer = setTimeout(() => void tick(), 1000);
    return {
      cancel() {
        cancelled = true;
        if (timer) clearTimeout(timer);
      },
    };
  }

  /** Returns true when the sandbox had to be restarted to stop the program. */
  private async stopProgram(ended: Promise<void>): Promise<boolean> {
    const streamEnded = ended.then(
      () => true,
      () => true,
    );
    // The engine starts an exec's process only after its stream is attached, so a program stopped
    // right after it was started may not exist yet when the first kill runs: kill again until its
    // output ends or the grace time is up.
    const giveUp = Date.now() + KILL_GRACE_MS;
    try {
      while (Date.now() < giveUp) {
        (await this.startKiller(giveUp - Date.now())).resume();
        const wait = Math.max(0, Math.min(KILL_RETRY_MS, giveUp - Date.now()));
        if (await Promise.race([streamEnded, delay(wait).then(() => false)])) return false;
      }
    } catch (e) {
      this.log.warn(`sandbox ${this.name}: could not stop the program from inside (${String((e as Error)?.message ?? e)})`);
    }
    // A fork bomb can leave no room for even the killer: restart the whole container.
    this.log.warn(`sandbox ${this.name}: restarting to stop the program`);
    await this.restart();
    await Promise.race([streamEnded, delay(KILL_GRACE_MS)]);
    return true;
  }

  private async exitCodeOf(exec: Dockerode.Exec): Promise<number | null> {
    for (let i = 0; i < 20; i++) {
      const info = await exec.inspect();
      if (!info.Running) return info.ExitCode ?? null;
      await delay(50);
    }
    return null;
  }

  async remove(): Promise<void> {
    this.runner?.close();
    await removeQuietly(this.docker, this.id, this.volumeName, this.log);
  }

  /** True when the container still exists and runs (e.g. not removed by `docker rm -f`). */
  async isAlive(): Promise<boolean> {
    try {
      const info = await withDeadline(this.container.inspect(), API_DEADLINE_MS, 'inspect container');
      return info.State.Running === true;
    } catch {
      return false;
    }
  }
}

/** The VOLUME paths an image declares, except our work area (which our own volume covers). */
async function declaredVolumes(docker: Dockerode, image: string): Promise<string[]> {
  try {
    const info = await withDeadline(docker.getImage(image).inspect(), API_DEADLINE_MS, 'inspect image');
    const declared = Object.keys(info.Config?.Volumes ?? {});
    return declared.filter((v) => v !== WORK_ROOT && !v.startsWith(`${WORK_ROOT}/`)).sort();
  } catch {
    return []; // createContainer says what is wrong with the image
  }
}

export async function removeQuietly(docker: Dockerode, containerId: string | undefined, volumeName: string | undefined, log: Logger) {
  if (containerId) {
    await docker
      .getContainer(containerId)
      // v: also the anonymous volumes of the image's VOLUME paths (never a named one such as the work area).
      .remove({ force: true, v: true })
      .catch((e: unknown) => {
        if (statusCode(e) !== 404) log.warn(`could not remove container ${containerId}: ${String((e as Error)?.message ?? e)}`);
      });
  }
  if (volumeName) {
    await docker
      .getVolume(volumeName)
      .remove()
      .catch((e: unknown) => {
        if (statusCode(e) !== 404) log.warn(`could not remove volume ${volumeName}: ${String((e as Error)?.message ?? e)}`);
      });
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export { LABEL };
