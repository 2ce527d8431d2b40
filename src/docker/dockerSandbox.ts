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

export interface SandboxSpec {
  image: string;
  limits: SandboxLimits;
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

/** The container's hardening, in one place so every backend and every test sees the same thing. */
export function hardenedHostConfig(volumeName: string, limits: SandboxLimits): Dockerode.HostConfig {
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
    Mounts: [{ Type: 'volume', Source: volumeName, Target: WORK_ROOT, ReadOnly: false }],
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
      const container = await withDeadline(
        docker.createContainer({
          name,
          Image: spec.image,
          // Reset any entrypoint the image declares: PID 1 is our keeper, nothing else.
          Entrypoint: [''],
          Cmd: ['python3', '-c', KEEPER_SOURCE],
          User: USER,
          WorkingDir: WORK_ROOT,
          Env: sandboxEnv(),
          Labels: labels,
          NetworkDisabled: true,
          HostConfig: hardenedHostConfig(name, spec.limits),
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
        volume !== undefined;
      if (!matches) return undefined;
      const sandbox = new DockerSandbox(docker, info.Id, info.Name.replace(/^\//, ''), volume, spec, log);
      if (!info.State.Running) await sandbox.start();
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
    await withDeadline(this.container.start(), API_DEADLINE_MS, 'start container');
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
    try {
      await this.putRunFiles(callId, run);
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
    const exit = await this.exec(workDir, run);
    return { ...exit, workDir, ...(notes.length ? { notes } : {}) };
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
      const killer = await withDeadline(
        this.container.exec({ Cmd: ['python3', '-c', KILL_ALL_SOURCE], User: USER, AttachStdout: true, AttachStderr: true }),
        KILL_GRACE_MS,
        'create kill exec',
      );
      const s = (await withDeadline(killer.start({ hijack: true, stdin: false }), KILL_GRACE_MS, 'start kill exec')) as NodeJS.ReadableStream;
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

  private translate(e: unknown): Error {
    if (e instanceof ToolError) return e;
    if (isUnreachable(e)) return engineUnreachable(e);
    const status = statusCode(e);
    if (status === 404 || status === 409) {
      return Object.assign(new Error('sandbox container is gone or stopped', { cause: e }), { sandboxGone: true });
    }
    return e instanceof Error ? e : new Error(String(e));
  }

  private async exec(workDir: string, run: ProgramRun): Promise<Omit<ProgramExit, 'workDir'>> {
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
        const killer = await withDeadline(
          this.container.exec({ Cmd: ['python3', '-c', KILL_ALL_SOURCE], User: USER, AttachStdout: true, AttachStderr: true }),
          Math.max(1, giveUp - Date.now()),
          'create kill exec',
        );
        const s = (await withDeadline(
          killer.start({ hijack: true, stdin: false }),
          Math.max(1, giveUp - Date.now()),
          'start kill exec',
        )) as NodeJS.ReadableStream;
        s.resume();
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

export async function removeQuietly(docker: Dockerode, containerId: string | undefined, volumeName: string | undefined, log: Logger) {
  if (containerId) {
    await docker
      .getContainer(containerId)
      .remove({ force: true })
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
