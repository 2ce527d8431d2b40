import type Dockerode from 'dockerode';
import { ToolError } from '../../core/errors';
// The deadline and the flags by their own files, not the rooms' doors: a command-line run loads this
// file before the rest of the Docker layer (lockAhead.ts), and those doors would bring it all.
import { ENGINE_DEADLINE_MS, withDeadline } from '../engine/deadline';
import { GUEST_PYTHON_FLAGS } from './pythonFlags';

/**
 * Holds the lock: `flock` on a directory the sandbox user cannot open (root's home, 0700; `/`
 * in an image without one), then waits for the host to go away. It runs as root without
 * capabilities, so a program (uid 65534) can neither open the directory to take the lock itself
 * nor signal this process (its kill(-1) of leftovers skips it). When the host process ends, however
 * it ends, the engine closes this exec's stdin and the lock is free again.
 */
export const LOCK_HOLDER_SOURCE = [
  'import fcntl, os, sys',
  "fd = os.open('/root' if os.path.isdir('/root') else '/', os.O_RDONLY)",
  // With an argument "try": a lock another process holds is answered "busy" instead of waited for.
  "nb = sys.argv[1:] == ['try']",
  'try:',
  '    fcntl.flock(fd, fcntl.LOCK_EX | (fcntl.LOCK_NB if nb else 0))',
  'except BlockingIOError:',
  "    sys.stdout.write('busy\\n')",
  '    sys.exit(0)',
  "sys.stdout.write('locked\\n')",
  'sys.stdout.flush()',
  'sys.stdin.buffer.read()',
].join('\n');

/** The engine's exec of a holder (with `onlyIfFree`: one that says "busy" rather than wait). */
export function lockHolderExec(onlyIfFree: boolean): Dockerode.ExecCreateOptions {
  return {
    Cmd: ['python3', ...GUEST_PYTHON_FLAGS, '-c', LOCK_HOLDER_SOURCE, ...(onlyIfFree ? ['try'] : [])],
    User: '0',
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
  };
}

/** Holders that end before taking the lock are replaced this many times in all. */
const HOLDER_ATTEMPTS = 3;

/** The holder's process ended before it took the lock (or said the lock was busy); its last output is kept for the log. */
export class HolderEndedError extends Error {
  constructor(output: string) {
    // The multiplexed stream's 8-byte frame headers are binary: only printable text is kept.
    const said = output.replace(/[^\x20-\x7e\n]/g, '').trim();
    super(`the lock holder ended before taking the lock${said ? ` (it said: ${said.slice(-200)})` : ''}`);
    this.name = 'HolderEndedError';
  }
}

/** A holder's stream: the exec's stdin, and its multiplexed output. */
export type HolderStream = NodeJS.ReadWriteStream & { destroy?: () => void };

/** What the lock needs of a container: an exec of its holder, started attached (a dockerode Container is one). */
export interface LockTarget {
  exec(options: Dockerode.ExecCreateOptions): Promise<{ id: string; start(options: { hijack: true; stdin: true }): Promise<HolderStream> }>;
}

/**
 * The cross-process lock of one sandbox. Separate processes sharing a sandbox (CLI runs with one
 * --session, several terminals or windows on one key) meet in the container itself, whichever
 * machine they run on, so that is where the lock lives: a small process inside the sandbox holds
 * it for as long as this host holds the exec's stream open.
 */
export class SandboxLock {
  private stream: HolderStream | undefined;
  /** The engine's id of the exec that holds the lock (while held). */
  private holder: string | undefined;
  /** Called when the holder ends while this lock is held (its container stopped or was removed), not when released or taken over. */
  onLost: (() => void) | undefined;

  constructor(private readonly container: LockTarget) {}

  get held(): boolean {
    return this.stream !== undefined;
  }

  /** The id of the exec holding the lock for this process, while it holds it. */
  get holderExecId(): string | undefined {
    return this.stream ? this.holder : undefined;
  }

  /**
   * Takes over the lock `from` holds (in the same container: the caller checks), so this one
   * releases it. False when `from` holds none, or its holder has already ended (its container
   * stopped or was removed): then nothing is held and nothing moved.
   */
  takeOver(from: SandboxLock): boolean {
    const stream = from.stream as (NodeJS.ReadWriteStream & { destroyed?: boolean; readableEnded?: boolean }) | undefined;
    if (this.stream || !stream || stream.destroyed || stream.readableEnded) return false;
    from.stream = undefined;
    this.stream = stream;
    this.holder = from.holder;
    return true;
  }

  /** Waits (cancellably) until this process holds the lock. */
  async acquire(signal: AbortSignal): Promise<void> {
    await this.take(signal, false);
  }

  /** Takes the lock only if nobody holds it; false when another process does. */
  async tryAcquire(signal: AbortSignal): Promise<boolean> {
    return this.take(signal, true);
  }

  private async take(signal: AbortSignal, onlyIfFree: boolean): Promise<boolean> {
    if (this.stream) return true;
    // On a loaded machine the holder's interpreter has been seen to end before it said anything
    // (a container still settling after its start): a holder that never took the lock took
    // nothing, so asking again is safe. A container that stopped fails the next exec with a status.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.takeOnce(signal, onlyIfFree);
      } catch (e) {
        if (!(e instanceof HolderEndedError) || attempt === HOLDER_ATTEMPTS || signal.aborted) throw e;
      }
    }
  }

  private async takeOnce(signal: AbortSignal, onlyIfFree: boolean): Promise<boolean> {
    const exec = await withDeadline(this.container.exec(lockHolderExec(onlyIfFree)), ENGINE_DEADLINE_MS, 'create lock exec');
    const stream = await withDeadline(exec.start({ hijack: true, stdin: true }), ENGINE_DEADLINE_MS, 'start lock exec');
    const locked = await new Promise<boolean>((resolve, reject) => {
      let seen = '';
      const done = (error?: Error, held = true) => {
        stream.off('data', onData);
        stream.off('end', onEnd);
        stream.off('close', onEnd);
        signal.removeEventListener('abort', onAbort);
        if (error || !held) stream.destroy?.();
        if (error) reject(error);
        else resolve(held);
      };
      // The multiplexed stream carries an 8-byte header per chunk; the marker is plain ASCII in it.
      const onData = (chunk: Buffer) => {
        seen = (seen + chunk.toString('latin1')).slice(-512);
        if (seen.includes('locked\n')) done();
        else if (seen.includes('busy\n')) done(undefined, false);
      };
      const onEnd = () => done(new HolderEndedError(seen));
      const onAbort = () => done(new ToolError('cancelled', 'The run was cancelled while it waited for the sandbox.'));
      stream.on('data', onData);
      stream.on('end', onEnd);
      stream.on('close', onEnd);
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) onAbort();
    });
    if (!locked) return false;
    // From now on its output is of no interest; keep the stream flowing so it never blocks.
    stream.on('error', () => {});
    stream.resume();
    this.stream = stream;
    this.holder = exec.id;
    stream.once('close', () => {
      if (this.stream === stream) this.onLost?.();
    });
    return true;
  }

  /** Lets the next process in: ends the holder's stdin (and the connection). */
  release(): void {
    const s = this.stream;
    this.stream = undefined;
    if (!s) return;
    try {
      s.end();
    } finally {
      s.destroy?.();
    }
  }
}
