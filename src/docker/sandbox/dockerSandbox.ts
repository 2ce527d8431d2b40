import { randomBytes } from 'node:crypto';
import type Dockerode from 'dockerode';
import { ToolError, describeError } from '../../core/errors';
import type { FilesOutCaps } from '../../core/limits';
import type { InstalledDistribution } from '../../core/missingModule';
import type { Logger } from '../../core/logger';
import type { CollectOutcome, OutputSink, ProgramExit, ProgramRun, Sandbox } from '../../core/sandbox';
import { collectFiles, imageTrustStore, layOutWorkArea, putRunFiles, trustEntries } from '../files';
import { ENGINE_DEADLINE_MS, SandboxGoneError, engineFailure, isEngineFailure, isGoneStatus, statusCode, withDeadline, type RuntimeChoice } from '../engine';
import { ExecStrategy, KILL_GRACE_MS, RunnerChannel, WarmStrategy, type ExitInfo, type StrategyResult, type WarmOps } from '../run';
import { RUNS_DIR, SandboxLock, guestEnded, killAllSparingSource, oomKillCount, removeQuietly, startGuest, type SandboxSpec } from '../container';
import { imageDistributions } from '../images';
import { credentialsNote } from '../../core/credentials';
import { networkNote } from '../../core/network';
import { egressNames, ensureEgress, proxyRunning, releaseEgress, runActivity, sidecarEgress, startMark, type Egress, type RunMark } from '../network';

/** Where a proxy that could not be built or started sends the user. */
export const NETWORK_LOG_HINT = 'the CodeAct Sandbox log (the output channel in VS Code, --verbose on the command line)';

/** A container another process just created: how long it may take to start (on a busy engine) before we give up on it. */
const SHARED_START_WAIT_MS = ENGINE_DEADLINE_MS;

/**
 * One session's sandbox: a hardened, long-lived container whose PID 1 is the warm runner (or a
 * plain keeper), plus a tmpfs volume as its work area. Each program gets a fresh directory under
 * /sandbox/runs and runs by one of two strategies: forked from the runner, or `docker exec`.
 * Calls on one sandbox are serialized; across processes (CLI sessions) by the sandbox's lock.
 */
/** The directories runProgram names (a replayed run is given one back from its record). */
const REPLAY_DIR = new RegExp(`^${RUNS_DIR}/((\\d{4,9})-[0-9a-f]{6})$`);

export class DockerSandbox implements Sandbox, WarmOps {
  private queue: Promise<unknown> = Promise.resolve();
  private runCount = 0;
  /** OOM kills of the container's cgroup already accounted for since it started. */
  private oomSeen = 0;
  private channel: RunnerChannel | undefined;
  /** The cross-process lock (taken by make.ts for a sandbox it made or attached, and by lock()). */
  readonly lockHolder: SandboxLock;
  private distributions: Promise<readonly InstalledDistribution[] | undefined> | undefined;
  private readonly execStrategy: ExecStrategy;
  private readonly warmStrategy: WarmStrategy | undefined;
  /** The pid of the process holding the session state, as the runner last said (0: none); kills spare it. */
  private holderPid = 0;
  /** This process started the container (made it, restarted it, started it from stopped) or took it as a spare: what it holds since is known. */
  private startedHere = false;
  /** A kept state since the provider last asked (takeStateKept): the chat's user site may have changed. */
  private stateKept = false;
  /** Told with the first program's result (not a replayed run's): what the sandbox was made from. */
  private firstNote: string | undefined;
  /** Made from a chat's prepared image (which, when its chat is deleted meanwhile, goes after it). */
  fromChatImage = false;
  lastUsed = Date.now();
  /** Made by this process (not found again): its first result tells the model about its network. */
  announceNetwork = false;
  /** The version label of its owner: a network and proxy made again for it carry the same. */
  ownerVersion: string | undefined;
  /** The last call's marker in the proxy's log: the next call's connections are those after it. */
  private lastMark: (RunMark & { proxyStartedAt: string | undefined }) | undefined;
  /** Its address on the internal network: the proxy's log names connections by it. */
  private clientAddress: string | undefined;
  /** Podman: the name of its own proxy, whose network namespace it joined (sidecar.ts). */
  sidecar: string | undefined;
  /** Docker with a network: its own internal network, which only the policy's proxy joins (egress.ts). */
  egressNetwork: string | undefined;
  /**
   * With credentials: the certificate of the CA made for this sandbox alone (public), laid into
   * the work area with the image's trust store at every start; the store is read once.
   */
  credentialCa: string | undefined;
  private trustStore: string | undefined;

  /** Made by make.ts (createSandbox, createSharedSandbox, attachSandbox): one object per container it made or found. */
  constructor(
    readonly docker: Dockerode,
    readonly id: string,
    /** Changes only when a spare is renamed to the session that took it. */
    public name: string,
    readonly volumeName: string,
    readonly spec: SandboxSpec,
    /** The runtime it runs under (runsc, runc, ...), as resolved against the engine. */
    readonly runtimeChoice: RuntimeChoice,
    readonly log: Logger,
  ) {
    this.lockHolder = new SandboxLock(this.container);
    this.execStrategy = new ExecStrategy(this);
    this.warmStrategy = spec.warmRunner === false ? undefined : new WarmStrategy(this);
  }

  get image(): string {
    return this.spec.image;
  }

  get runtime(): string {
    return this.runtimeChoice.name;
  }

  get packagesSetting(): string | undefined {
    return this.spec.packagesSetting;
  }

  /** From the image's labels, read once (the image of a sandbox does not change). */
  installed(): Promise<readonly InstalledDistribution[] | undefined> {
    this.distributions ??= imageDistributions(this.docker, this.spec.image);
    return this.distributions;
  }

  get container(): Dockerode.Container {
    return this.docker.getContainer(this.id);
  }

  get runner(): RunnerChannel | undefined {
    return this.channel;
  }

  /**
   * Starts a stopped shared container (`now`), or waits for the process that created it to start
   * it, and starts it itself only if that process never does (it died in between).
   */
  async startShared(now: boolean): Promise<void> {
    const giveUp = Date.now() + SHARED_START_WAIT_MS;
    while (!now && !(await this.isAlive())) {
      if (Date.now() > giveUp) now = true;
      else await new Promise((r) => setTimeout(r, 100));
    }
    if (!now) return;
    try {
      await withDeadline(this.container.start(), ENGINE_DEADLINE_MS, 'start container');
      // Started by this process from stopped (an engine restart, a crash): it holds no state, so a
      // kept session's state is rebuilt (resume) instead of being found lost by its next program.
      this.startedFresh();
    } catch (e) {
      if (statusCode(e) !== 304) throw e; // 304: started by someone else meanwhile
    }
    await this.layOutWorkArea();
  }

  /** Holds this sandbox's cross-process lock; the runner channel is opened only while it is held. */
  async lock(signal: AbortSignal): Promise<void> {
    if (!this.lockHolder.held) await this.lockHolder.acquire(signal);
    // Also when the lock was taken ahead (make.ts): the channel is opened only under the lock.
    if (!this.channel || this.channel.state === 'broken') await this.reconnect();
  }

  /** Lets another process use the sandbox: detaches from the runner first, so nothing of ours is written to it. */
  async unlock(): Promise<void> {
    this.detach();
  }

  /** Renames the container (a spare taken by a session gets the session's name); isNameTaken: the name is another's. */
  async rename(name: string): Promise<void> {
    await withDeadline(this.container.rename({ name }), ENGINE_DEADLINE_MS, 'rename container');
    this.name = name;
  }

  /** Lets go of the container without removing it: the runner channel, then the lock. */
  detach(): void {
    this.channel?.close();
    this.channel = undefined;
    this.lockHolder.release();
  }

  /** Starts the container and lays out the work area (a tmpfs: empty after every start). */
  async start(options: { greet: boolean } = { greet: true }): Promise<void> {
    // Attached before the start, so nothing the runner says is missed.
    await this.openRunner();
    try {
      await withDeadline(this.container.start(), ENGINE_DEADLINE_MS, 'start container');
    } catch (e) {
      // 304: a process sharing the sandbox started it first (it waited for us, then gave up).
      if (statusCode(e) !== 304) throw e;
    }
    this.startedFresh();
    // The runner preloads while the work area is laid out and the first program is copied in.
    if (options.greet) this.channel?.greet();
    await this.layOutWorkArea();
  }


  /** Started by this process: no state, and a new cgroup whose counters start at zero again. */
  private startedFresh(): void {
    this.oomSeen = 0;
    this.holderPid = 0;
    this.startedHere = true;
  }

  /** A spare this process took for a session (sparePool.ts): no session program has run in it, so it holds no state. */
  knownFresh(): void {
    this.holderPid = 0;
    this.startedHere = true;
  }

  /** Lays out the work area's folders (idempotent: whoever starts the container does it too), and its tls folder with credentials. */
  async layOutWorkArea(): Promise<void> {
    if (this.credentialCa === undefined) return layOutWorkArea(this.container, ENGINE_DEADLINE_MS);
    this.trustStore ??= await imageTrustStore(this.container, ENGINE_DEADLINE_MS);
    return layOutWorkArea(this.container, ENGINE_DEADLINE_MS, trustEntries(this.trustStore, this.credentialCa));
  }

  /** Kill everything and start again: the way out when the program cannot be stopped from inside. */
  async restart(): Promise<void> {
    try {
      try {
        await withDeadline(this.container.kill({ signal: 'SIGKILL' }), ENGINE_DEADLINE_MS, 'kill container');
      } catch (e) {
        if (statusCode(e) !== 409) throw e; // 409: it was not running
      }
      await withDeadline(this.container.wait({ condition: 'not-running' }), ENGINE_DEADLINE_MS, 'wait for container').catch(() => {});
      // The lock holder died with the container: this process still owns the sandbox, so take it again.
      const relock = this.lockHolder.held;
      this.lockHolder.release();
      await this.start({ greet: !relock });
      if (relock) {
        await this.lockHolder.acquire(new AbortController().signal);
        this.channel?.greet();
      }
    } catch (e) {
      throw this.translate(e);
    }
  }

  /** Whether a call kept a state since the last ask. */
  takeStateKept(): boolean {
    const kept = this.stateKept;
    this.stateKept = false;
    return kept;
  }

  /** A sentence for the first program's result (a replayed run's is not shown to anyone). */
  tellFirstProgram(note: string): void {
    this.firstNote = note;
  }

  /** A container found again (another process's, a kept session's) may hold a state this object never heard of. */
  knownEmpty(): boolean {
    return this.startedHere && this.holderPid === 0;
  }

  run(run: ProgramRun): Promise<ProgramExit> {
    const next = this.queue.then(() => this.runNow(run));
    this.queue = next.catch(() => {});
    return next.finally(() => {
      this.lastUsed = Date.now();
    });
  }

  /**
   * A session call is over (its files read, the sandbox not handed to another process): the
   * runner forks the next program's process from the state now, queued like a run, so the next
   * call's files and program wait for it. Not in a sandbox with a network: the fork runs the
   * state's own at-fork code, and a connection made after the last call would be in no call's record.
   */
  forkNextAhead(): void {
    const warm = this.warmStrategy;
    if (!this.holderPid || this.spec.network || !warm?.readyNow) return;
    void this.between(() => warm.ahead()).catch(() => {});
  }

  /** Runs `task` between two programs (serialized with runs and collects): what it starts in the sandbox meets no program's end. */
  between<T>(task: () => Promise<T>): Promise<T> {
    const next = this.queue.then(task);
    this.queue = next.catch(() => {});
    return next;
  }

  private async runNow(run: ProgramRun): Promise<ProgramExit> {
    if (!this.spec.network || run.signal.aborted) return this.runProgram(run);
    // Docker: the proxy is brought back before the call when it died since the last one (its
    // time limit does not count this). Podman: a sandbox whose own proxy stopped is replaced.
    const egress =
      this.sidecar !== undefined || this.runtimeChoice.engine === 'podman'
        ? await sidecarEgress(this.docker, this.spec.network, this.sidecar)
        : await ensureEgress({
            docker: this.docker,
            engine: this.runtimeChoice.engine,
            target: this.spec.network,
            network: this.ownNetwork(),
            log: this.log,
            signal: run.signal,
            logHint: NETWORK_LOG_HINT,
            ...(this.ownerVersion ? { version: this.ownerVersion } : {}),
          });
    // The previous marker is in this proxy's log only when it is the same proxy (not one started
    // again since); without one, a marker sent now is where this call's record starts.
    let previous: RunMark | undefined = this.lastMark && this.lastMark.proxyStartedAt === egress.startedAt ? this.lastMark : undefined;
    previous ??= await startMark(this.container, egress);
    const since = Date.now();
    const exit = await this.runProgram(run);
    const client = await this.addressOn(egress);
    if (!client) return exit;
    const { activity: network, mark } = await runActivity(this.docker, this.container, egress, client, { since, previous, spare: this.holderPid ? [this.holderPid] : [] });
    // A marker not read (the proxy died) leaves the last one: the next call starts after it.
    if (mark) this.lastMark = { ...mark, proxyStartedAt: egress.startedAt };
    const notes = [...(exit.notes ?? [])];
    if (this.announceNetwork) {
      const credentials = this.spec.network.credentials && credentialsNote(this.spec.network.credentials.bindings);
      notes.unshift(networkNote(this.spec.network.policy), ...(credentials ? [credentials] : []));
      this.announceNetwork = false;
    }
    if (!network.complete && !(await proxyRunning(this.docker, egress))) {
      notes.push(
        this.sidecar !== undefined
          ? "The sandbox's network proxy stopped during the run, so the program may have lost its connections; the next call starts a new sandbox with a new proxy."
          : "The sandbox's network proxy stopped during the run, so the program may have lost its connections; the next call starts it again.",
      );
    }
    return { ...exit, network, ...(notes.length ? { notes } : {}) };
  }

  private async addressOn(egress: Egress): Promise<string | undefined> {
    // Sharing its proxy's namespace, it reaches the proxy from loopback.
    if (this.sidecar !== undefined) return egress.proxyAddress;
    if (this.clientAddress) return this.clientAddress;
    try {
      const info = await withDeadline(this.container.inspect(), ENGINE_DEADLINE_MS, 'inspect container');
      this.clientAddress = info.NetworkSettings.Networks?.[egress.network]?.IPAddress || undefined;
    } catch (e) {
      this.log.warn(`sandbox ${this.name}: cannot read its network address (${describeError(e)}); the run's connections are not recorded`);
    }
    return this.clientAddress;
  }

  private async runProgram(run: ProgramRun): Promise<ProgramExit> {
    if (run.signal.aborted) return { exitCode: null, workDir: '' };
    const replayed = run.workDir !== undefined ? REPLAY_DIR.exec(run.workDir) : null;
    if (run.workDir !== undefined && !replayed) throw new Error(`not a run directory of a sandbox: ${JSON.stringify(run.workDir)}`);
    const callId = replayed ? replayed[1]! : `${String(++this.runCount).padStart(4, '0')}-${randomBytes(3).toString('hex')}`;
    // A replayed run takes back its number: the calls after it do not reuse one.
    if (replayed) this.runCount = Math.max(this.runCount, Number(replayed[2]));
    const workDir = `${RUNS_DIR}/${callId}`;
    const notes: string[] = [];
    if (this.firstNote && !replayed) {
      notes.push(this.firstNote);
      this.firstNote = undefined;
    }
    const done = (exit: ExitInfo): ProgramExit => {
      const all = [...notes, ...(exit.notes ?? [])];
      let state: ProgramExit['state'];
      if (exit.state) {
        const { holder, ...outcome } = exit.state;
        this.holderPid = holder;
        state = outcome;
        if (outcome.kept) this.stateKept = true;
      }
      return {
        exitCode: exit.exitCode,
        workDir,
        ...(exit.replaced ? { replaced: true } : {}),
        ...(exit.oomKilled ? { oomKilled: true } : {}),
        ...(all.length ? { notes: all } : {}),
        ...(state ? { state } : {}),
      };
    };
    try {
      const warm = this.warmStrategy ? await this.warmStrategy.prepare(run.signal, run.state !== undefined) : { ready: false, notes: [] };
      notes.push(...warm.notes);
      // The fast path: the warm runner writes the program itself when no files are shared (one
      // round trip instead of an archive upload) and runs it in a child forked from a warm interpreter.
      let written = false;
      if (warm.ready && this.warmStrategy && !run.files?.length) {
        const result = await this.warmStrategy.run(workDir, run, Buffer.from(run.code, 'utf8'));
        if (result.kind === 'exit') return done(result.exit);
        written = result.written;
      }
      if (run.signal.aborted) return done({ exitCode: null });
      if (!written) notes.push(...(await this.putRunFiles(callId, run)));
      // Stopped while the program was being copied in: do not start it at all.
      if (run.signal.aborted) return done({ exitCode: null });
      // Laid out by an archive: the runner may still take it; written by a runner that declined: exec.
      if (!written && this.warmStrategy?.readyNow) {
        const result: StrategyResult = await this.warmStrategy.run(workDir, run);
        if (result.kind === 'exit') return done(result.exit);
        if (run.signal.aborted) return done({ exitCode: null });
      }
      const result = await this.execStrategy.run(workDir, run);
      // docker exec ends nothing the program started: a daemon it left (a double fork) would run
      // into later calls, its connections in their records or in none. Every way a program runs
      // ends its processes, and waits for them, before the call's end is reported.
      await this.killLeftovers();
      return done(result.kind === 'exit' ? result.exit : { exitCode: null });
    } catch (e) {
      throw this.translate(e);
    }
  }

  /** Copies the program and the shared files in; returns what the model must be told about it. */
  private putRunFiles(callId: string, run: ProgramRun): Promise<string[]> {
    return putRunFiles(this, callId, run, ENGINE_DEADLINE_MS);
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
      await guestEnded(await this.startKiller(KILL_GRACE_MS));
    } catch (e) {
      // A fork bomb may leave no room for the killer; the stats and tar checks still hold.
      this.log.warn(`sandbox ${this.name}: could not stop leftover processes before collecting (${describeError(e)})`);
    }
  }

  startKiller(deadlineMs: number): Promise<NodeJS.ReadableStream> {
    return startGuest(this.container, killAllSparingSource(this.holderPid ? [this.holderPid] : []), deadlineMs);
  }

  async newOomKill(): Promise<boolean> {
    const count = await oomKillCount(this.docker, this.container).catch((e: unknown) => {
      this.log.info(`sandbox ${this.name}: cannot read the OOM-kill count (${describeError(e)})`);
      return undefined;
    });
    if (count === undefined) return false;
    const fresh = count > this.oomSeen;
    this.oomSeen = count;
    return fresh;
  }

  private translate(e: unknown): Error {
    if (e instanceof ToolError || e instanceof SandboxGoneError) return e;
    if (isEngineFailure(e)) return engineFailure(e, this.docker);
    if (isGoneStatus(e)) return new SandboxGoneError(undefined, { cause: e });
    return e instanceof Error ? e : new Error(String(e));
  }

  /** Opens the channel to the runner (PID 1 of a warm sandbox); without one, programs run by `docker exec`. */
  private async openRunner(): Promise<void> {
    this.channel?.close();
    this.channel = undefined;
    if (this.spec.warmRunner === false) return;
    try {
      this.channel = await withDeadline(RunnerChannel.open(this.docker, this.container, this.name, this.log), ENGINE_DEADLINE_MS, 'attach to the runner');
    } catch (e) {
      this.log.warn(`sandbox ${this.name}: cannot attach to the runner (${describeError(e)}); programs run by docker exec`);
    }
  }

  /** Resolves once programs are forked from the warm runner; false when they will run by docker exec. */
  warmedUp(timeoutMs = 300): Promise<boolean> {
    const runner = this.channel;
    return runner ? runner.whenReady(timeoutMs, new AbortController().signal) : Promise.resolve(false);
  }

  /** Attaches to the runner (again) and greets it. */
  async reconnect(): Promise<void> {
    await this.openRunner();
    this.channel?.greet();
  }

  async remove(): Promise<void> {
    this.detach();
    // Its own proxy goes with it (Podman); the last sandbox of a network takes its proxy and
    // network with it (Docker).
    await removeQuietly(this.docker, this.id, this.volumeName, this.log, this.sidecar);
    if (this.spec.network && this.egressNetwork !== undefined) {
      const network = this.egressNetwork;
      await releaseEgress(this.docker, egressNames(this.spec.network).digest, network, this.log).catch((e: unknown) =>
        this.log.warn(`could not release the network ${network}: ${describeError(e)}`),
      );
    }
  }

  /** Its own network (Docker); one made by a version that shared a network per policy has none, and is replaced. */
  private ownNetwork(): string {
    if (this.egressNetwork === undefined) throw new SandboxGoneError('it has no network of its own');
    return this.egressNetwork;
  }

  /** True when the container still exists and runs (e.g. not removed by `docker rm -f`). */
  async isAlive(): Promise<boolean> {
    try {
      const info = await withDeadline(this.container.inspect(), ENGINE_DEADLINE_MS, 'inspect container');
      return info.State.Running === true;
    } catch {
      return false;
    }
  }
}

