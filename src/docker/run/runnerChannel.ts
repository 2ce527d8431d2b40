import { randomBytes } from 'node:crypto';
import { Writable, type Duplex } from 'node:stream';
import type Dockerode from 'dockerode';
import type { Logger } from '../../core/logger';
import { systemClock, type Clock, type Timer } from '../../core/clock';
import {
  aheadReplySchema,
  FrameDecoder,
  HOST_KIND,
  ProtocolError,
  RUNNER_KIND,
  RUNNER_PROTOCOL_VERSION,
  declinedReplySchema,
  encodeFrame,
  encodeRunRequest,
  exitReplySchema,
  helloReplySchema,
  parseReply,
  startedReplySchema,
  type Frame,
  type HelloReply,
  type RunRequest,
  type StateReply,
} from '../../core/runnerProtocol';

/**
 * How long the runner may take to say a program started; no answer in this long means it is stuck.
 * It usually answers at once (it forks), but first it may legitimately wait, each wait bounded in
 * resources/runner/: up to DYING_GRACE_S (5 s) for the previous program to finish exiting, then,
 * in session mode, up to HOLDER_START_SECONDS (5 s) for the state's holder to fork the program. A
 * 5 s deadline could run out inside those waits (a slow exit, a large state forked under gVisor or
 * on a loaded machine): the runner declared stuck while doing its job, the run killed and run by
 * docker exec instead (in session mode, without its state). So: both waits, plus 5 s for the fork
 * and the scheduler. A runner that is really stuck (frozen) costs the call this long before it
 * falls back to docker exec; test/unit/runnerChannel.test.ts keeps the sum in step with the runner.
 */
export const START_DEADLINE_MS = 15_000;
/**
 * How long the runner may take to answer `a` (fork the next session program ahead): its bounded
 * waits for it are the child's start (HOLDER_START_SECONDS, 5 s) and the stops of the two
 * processes that ran, the holder and the child (HOLDER_STOP_SECONDS, 5 s each), plus 10 s for the
 * kill of what a child that fails its check left (3 s at most), the forks and the scheduler. No
 * answer in this long is a runner as stuck as one that does not start a program.
 */
export const AHEAD_DEADLINE_MS = 25_000;
/** Hellos are repeated this often until answered (one may be lost with a host that died mid-frame). */
export const HELLO_RETRY_MS = 1_000;
/** How long a runner that said it starts over (to preload what a program imported) has to answer a hello before the channel is given up. */
export const RESTART_DEADLINE_MS = 120_000;
/** Lines of the runner's own stderr kept for the log, and their length. */
export const LOG_LINE_MAX = 500;

/** The attach stream ended (a detach, the container stopping): expected, so not logged as a failure. */
export class ChannelClosedError extends Error {
  constructor() {
    super('the runner channel closed');
    this.name = 'ChannelClosedError';
  }
}

export type RunnerState = 'connecting' | 'ready' | 'unusable' | 'broken';

export type RunnerOutcome =
  /** `oomKilled`: whether the kernel killed the program for memory; absent when the runner could not tell. */
  /** `state`: a session call's (see stateReplySchema). */
  | { kind: 'exit'; exitCode: number | null; killed: boolean; limited: boolean; orphans: boolean; oomKilled?: boolean; state?: StateReply }
  /** The program was not started; `written` says whether program.py is in its directory. */
  | { kind: 'declined'; reason: string; written: boolean }
  /** The channel failed; `started` says whether the program may have run. */
  | { kind: 'failed'; started: boolean; error: Error };

/** What a channel runs on besides its stream (the defaults are the real ones). */
export interface ChannelOptions {
  /**
   * Splits what the stream reads into the runner's stdout (frames) and stderr (its log lines): an
   * attach stream multiplexes the two. Without it everything read is stdout, as from a plain pipe.
   */
  demux?: (stdout: (chunk: Buffer) => void, stderr: (chunk: Buffer) => void) => void;
  /** The deadlines' timers (hello retries, readiness waits, start and kill deadlines). */
  clock?: Clock;
  /** The nonce of the handshake: random, so no older hello's answer is taken for this one. */
  nonce?: () => string;
}

interface ActiveRun {
  id: number;
  onFrame(frame: Frame): void;
  onBroken(error: Error): void;
}

/**
 * The host's end of the channel to a sandbox's runner: the container's attach stream (PID 1's
 * stdin and stdout; its stderr goes to the log), or any duplex stream to a runner (`over`).
 * Everything it receives is validated: a frame that is malformed, too large or of the wrong shape
 * breaks the channel for good, and the caller falls back to `docker exec`.
 */
export class RunnerChannel {
  private stream: Duplex | undefined;
  private readonly decoder = new FrameDecoder();
  private stateValue: RunnerState = 'connecting';
  private hello: HelloReply | undefined;
  private nonce = '';
  private helloTimer: Timer | undefined;
  private readyWaiters = new Set<() => void>();
  private active: ActiveRun | undefined;
  private stderrLine = '';
  private brokenReason: string | undefined;
  private restartTimer: Timer | undefined;
  private readonly learnedModules = new Set<string>();

  private constructor(
    private readonly label: string,
    private readonly log: Logger,
    private readonly clock: Clock,
    private readonly newNonce: () => string,
  ) {}

  /** Attaches to the container's stdio; works before it starts (nothing said at start is lost). */
  static async open(docker: Dockerode, container: Dockerode.Container, label: string, log: Logger): Promise<RunnerChannel> {
    // Hijacked, the attach stream is the engine connection's socket: a duplex.
    const stream = (await container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as Duplex;
    const sink = (deliver: (chunk: Buffer) => void) =>
      new Writable({
        write(chunk: Buffer, _enc, done) {
          deliver(chunk);
          done();
        },
      });
    return RunnerChannel.over(stream, label, log, { demux: (stdout, stderr) => docker.modem.demuxStream(stream, sink(stdout), sink(stderr)) });
  }

  /**
   * The channel over any duplex stream to the runner: what is written goes to its stdin, what is
   * read is its stdout (and, through `options.demux`, its stderr). Its end, close or error breaks
   * the channel.
   */
  static over(stream: Duplex, label: string, log: Logger, options: ChannelOptions = {}): RunnerChannel {
    const channel = new RunnerChannel(label, log, options.clock ?? systemClock, options.nonce ?? (() => randomBytes(8).toString('hex')));
    channel.stream = stream;
    const onStdout = (c: Buffer) => channel.onStdout(c);
    const onStderr = (c: Buffer) => channel.onStderr(c);
    if (options.demux) options.demux(onStdout, onStderr);
    else stream.on('data', onStdout);
    stream.on('end', () => channel.fail(new ChannelClosedError()));
    stream.on('close', () => channel.fail(new ChannelClosedError()));
    stream.on('error', (e: Error) => channel.fail(e));
    return channel;
  }

  get state(): RunnerState {
    return this.stateValue;
  }

  get info(): HelloReply | undefined {
    return this.hello;
  }

  /** Starts the handshake: hellos until one is answered with our nonce. */
  greet(): void {
    if (this.stateValue !== 'connecting' || this.helloTimer) return;
    this.nonce = this.newNonce();
    const send = () => {
      if (this.stateValue !== 'connecting') return;
      this.write(encodeFrame(HOST_KIND.hello, 0, Buffer.from(`nonce=${this.nonce}`, 'ascii')));
      this.helloTimer = this.clock.setTimeout(send, HELLO_RETRY_MS);
      this.helloTimer.unref();
    };
    send();
  }

  /** Resolves true once the runner is ready, false when it cannot be (or the wait is over). */
  whenReady(timeoutMs: number, signal: AbortSignal): Promise<boolean> {
    if (this.stateValue !== 'connecting') return Promise.resolve(this.stateValue === 'ready');
    return new Promise((resolve) => {
      const done = () => {
        this.clock.clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.readyWaiters.delete(done);
        resolve(this.stateValue === 'ready');
      };
      const timer = this.clock.setTimeout(done, timeoutMs);
      signal.addEventListener('abort', done, { once: true });
      this.readyWaiters.add(done);
    });
  }

  /**
   * Runs one program. Output arrives through the callbacks as it is printed. Aborting kills the
   * program's process group (and whatever it left) inside the sandbox; when the runner does not
   * confirm within `killGraceMs`, the outcome is `failed` with `started: true`.
   */
  run(
    id: number,
    request: RunRequest,
    io: { onStdout(chunk: Buffer): void; onStderr(chunk: Buffer): void; onStarted?(): void },
    signal: AbortSignal,
    killGraceMs: number,
  ): Promise<RunnerOutcome> {
    if (this.stateValue !== 'ready') return Promise.resolve({ kind: 'declined', reason: `runner ${this.stateValue}`, written: false });
    if (this.active) return Promise.resolve({ kind: 'declined', reason: 'runner busy', written: false });
    return new Promise<RunnerOutcome>((resolve) => {
      const progress = { started: false };
      let killTimer: Timer | undefined;
      const finish = (outcome: RunnerOutcome) => {
        this.clock.clearTimeout(startTimer);
        this.clock.clearTimeout(killTimer);
        signal.removeEventListener('abort', onAbort);
        if (this.active === active) this.active = undefined;
        resolve(outcome);
      };
      const onAbort = () => {
        this.write(encodeFrame(HOST_KIND.kill, id));
        killTimer = this.clock.setTimeout(() => {
          this.log.warn(`sandbox ${this.label}: the runner did not confirm the kill of run ${id}`);
          this.breakChannel(`run ${id} was not confirmed killed`);
          finish({ kind: 'failed', started: true, error: new Error('the runner did not confirm the kill') });
        }, killGraceMs);
      };
      const startTimer = this.clock.setTimeout(() => {
        // Whatever it is doing, it must not start this program later: ask it to kill it, then give up on it.
        this.write(encodeFrame(HOST_KIND.kill, id));
        this.breakChannel(`run ${id} was not started within ${START_DEADLINE_MS} ms`);
        finish({ kind: 'failed', started: false, error: new Error('the runner did not start the program') });
      }, START_DEADLINE_MS);
      const active: ActiveRun = {
        id,
        onFrame: (frame) =>
          readRunFrame(
            frame,
            progress,
            {
              ...io,
              onStarted: () => {
                this.clock.clearTimeout(startTimer);
                io.onStarted?.();
              },
              onStartingOver: (m) => this.startingOver(m),
            },
            finish,
          ),
        onBroken: (error) => finish({ kind: 'failed', started: progress.started, error }),
      };
      this.active = active;
      signal.addEventListener('abort', onAbort, { once: true });
      this.write(encodeFrame(HOST_KIND.run, id, encodeRunRequest(request)));
      if (signal.aborted) onAbort();
    });
  }

  /**
   * Asks the runner to fork the next session program's process now, from the state the last call
   * left: the call is over and its files are read. Resolves whether that process waits (false: no
   * state, a check that failed, or a channel not ready). Runs are refused meanwhile, as during a run.
   */
  ahead(id: number): Promise<boolean> {
    if (this.stateValue !== 'ready' || this.active) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const finish = (ready: boolean) => {
        this.clock.clearTimeout(timer);
        if (this.active === active) this.active = undefined;
        resolve(ready);
      };
      const timer = this.clock.setTimeout(() => {
        this.breakChannel(`the fork ahead ${id} was not answered within ${AHEAD_DEADLINE_MS} ms`);
        finish(false);
      }, AHEAD_DEADLINE_MS);
      const active: ActiveRun = {
        id,
        onFrame: (frame) => {
          if (frame.kind !== RUNNER_KIND.ahead) throw new ProtocolError(`unexpected ${frame.kind} frame after a fork ahead`);
          finish(parseReply(aheadReplySchema, frame.payload, 'ahead').ready);
        },
        onBroken: () => finish(false),
      };
      this.active = active;
      this.write(encodeFrame(HOST_KIND.ahead, id));
    });
  }

  /**
   * The runner said, with a program's exit, that it starts over to preload what the program
   * imported: until the new runner answers a hello, calls wait for it as for a starting one.
   */
  private startingOver(modules: readonly string[]): void {
    for (const m of modules) this.learnedModules.add(m);
    if (this.stateValue !== 'ready') return;
    this.log.info(`sandbox ${this.label}: the runner starts over to preload ${modules.join(', ')} (a program imported them)`);
    this.clock.clearTimeout(this.helloTimer);
    this.helloTimer = undefined;
    this.setState('connecting');
    this.restartTimer = this.clock.setTimeout(() => {
      this.restartTimer = undefined;
      this.log.warn(`sandbox ${this.label}: the runner did not come back within ${RESTART_DEADLINE_MS / 1000} s of starting over`);
      this.breakChannel('the runner did not come back after starting over');
    }, RESTART_DEADLINE_MS);
    this.restartTimer.unref();
    this.greet();
  }

  /** Modules the runner said it starts over to preload (a program imported them), over this channel's life. */
  get learned(): ReadonlySet<string> {
    return this.learnedModules;
  }

  /** True from a runner's word that it starts over until the next one answers (a call waits for it rather than run beside it). */
  get restarting(): boolean {
    return this.restartTimer !== undefined;
  }

  /** Detaches. The runner goes on (it is the container's PID 1) and a later host may attach again. */
  close(): void {
    this.breakChannel('closed');
  }

  private write(frame: Buffer): void {
    const s = this.stream;
    if (!s) return;
    try {
      s.write(frame);
    } catch (e) {
      this.fail(e instanceof Error ? e : new Error(String(e)));
    }
  }

  private onStdout(chunk: Buffer): void {
    if (this.stateValue === 'broken' || this.stateValue === 'unusable') return;
    let frames: Frame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (e) {
      this.fail(e as Error);
      return;
    }
    for (const frame of frames) {
      try {
        this.dispatch(frame);
      } catch (e) {
        this.fail(e instanceof Error ? e : new Error(String(e)));
        return;
      }
    }
  }

  private dispatch(frame: Frame): void {
    if (frame.kind === RUNNER_KIND.hello) {
      const hello = parseReply(helloReplySchema, frame.payload, 'hello');
      if (hello.nonce !== this.nonce || this.stateValue !== 'connecting') return; // an answer to an older hello
      this.clock.clearTimeout(this.helloTimer);
      this.clock.clearTimeout(this.restartTimer);
      this.restartTimer = undefined;
      this.hello = hello;
      if (!hello.usable || hello.v !== RUNNER_PROTOCOL_VERSION) {
        this.log.warn(`sandbox ${this.label}: runner not usable (${hello.reason ?? `protocol ${hello.v}`}); programs run by docker exec`);
        // Nothing it says is trusted from now on (an unusable runner is not shielded from programs).
        this.setState('unusable');
        this.detach();
        return;
      }
      this.log.info(
        `sandbox ${this.label}: runner ready (Python ${hello.python}; preloaded ${hello.preloaded.join(', ') || 'nothing'}` +
          `${hello.missing.length ? `; not in the image: ${hello.missing.join(', ')}` : ''}` +
          `${hello.dirty.length ? `; not preloaded, not transparent: ${hello.dirty.join(', ')}` : ''})`,
      );
      this.setState('ready');
      return;
    }
    const active = this.active;
    // Frames of a run given up on (the runner is told to kill it) are dropped; nothing else may come.
    if (!active || frame.id !== active.id) {
      if (frame.kind === RUNNER_KIND.hello || frame.id === 0) throw new ProtocolError(`unexpected ${frame.kind} frame`);
      return;
    }
    active.onFrame(frame);
  }

  private onStderr(chunk: Buffer): void {
    this.stderrLine += chunk.toString('utf8');
    let at: number;
    while ((at = this.stderrLine.indexOf('\n')) >= 0) {
      this.log.info(`sandbox ${this.label} runner: ${this.stderrLine.slice(0, Math.min(at, LOG_LINE_MAX))}`);
      this.stderrLine = this.stderrLine.slice(at + 1);
    }
    if (this.stderrLine.length > LOG_LINE_MAX) this.stderrLine = this.stderrLine.slice(-LOG_LINE_MAX);
  }

  private breakChannel(reason: string): void {
    if (this.stateValue === 'broken') return;
    this.brokenReason ??= reason;
    this.setState('broken');
    this.detach();
  }

  private detach(): void {
    this.clock.clearTimeout(this.helloTimer);
    this.clock.clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    const s = this.stream;
    this.stream = undefined;
    s?.destroy?.();
  }

  private fail(error: Error): void {
    if (this.stateValue === 'broken') return;
    if (this.stateValue !== 'unusable' && !(error instanceof ChannelClosedError)) {
      this.log.warn(`sandbox ${this.label}: runner channel failed: ${error.message}`);
    }
    const active = this.active;
    this.active = undefined;
    this.breakChannel(error.message);
    active?.onBroken(error);
  }

  private setState(state: RunnerState): void {
    this.stateValue = state;
    for (const w of [...this.readyWaiters]) w();
  }

  /** Why the channel was given up, for the log. */
  get reason(): string | undefined {
    return this.brokenReason;
  }
}

/**
 * One frame of a run, in the order the runner owes them: started, then output, then an exit (or
 * declined, before it started). Anything else breaks the channel (a ProtocolError).
 */
function readRunFrame(
  frame: Frame,
  progress: { started: boolean },
  io: { onStarted(): void; onStdout(chunk: Buffer): void; onStderr(chunk: Buffer): void; onStartingOver(modules: readonly string[]): void },
  finish: (outcome: RunnerOutcome) => void,
): void {
  switch (frame.kind) {
    case RUNNER_KIND.started:
      parseReply(startedReplySchema, frame.payload, 'started');
      progress.started = true;
      io.onStarted();
      return;
    case RUNNER_KIND.stdout:
      if (!progress.started) throw new ProtocolError('output before the program started');
      io.onStdout(frame.payload);
      return;
    case RUNNER_KIND.stderr:
      if (!progress.started) throw new ProtocolError('output before the program started');
      io.onStderr(frame.payload);
      return;
    case RUNNER_KIND.exit: {
      if (!progress.started) throw new ProtocolError('exit before the program started');
      const x = parseReply(exitReplySchema, frame.payload, 'exit');
      if (x.preloading) io.onStartingOver(x.preloading);
      finish({
        kind: 'exit',
        exitCode: x.exitCode,
        killed: x.killed,
        limited: x.limited,
        orphans: x.orphans,
        ...(x.oomKilled !== undefined ? { oomKilled: x.oomKilled } : {}),
        ...(x.state ? { state: x.state } : {}),
      });
      return;
    }
    case RUNNER_KIND.declined: {
      if (progress.started) throw new ProtocolError('declined after the program started');
      const d = parseReply(declinedReplySchema, frame.payload, 'declined');
      finish({ kind: 'declined', reason: d.reason, written: d.written });
      return;
    }
    default:
      throw new ProtocolError(`unexpected ${frame.kind} frame during a run`);
  }
}
