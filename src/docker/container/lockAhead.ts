import { ENGINE_DEADLINE_MS, withDeadline } from '../engine/deadline';
import { SandboxLock } from './lock';
import { socketContainer } from './socketExec';

/** A lock taken ahead, and the container it is held in. */
export interface HeldAhead {
  lock: SandboxLock;
  containerId: string;
}

/**
 * A kept sandbox's cross-process lock, asked for by name as a command-line run starts. The lock's
 * exec is the slowest step of a warm run on a kept session, and this file and Node's HTTP client
 * are all it needs (socketExec.ts), so the engine starts the holder while the rest of the command
 * line is still loading. On a 2-vCPU virtual machine (Node 20) the exec took 75-110 ms and the
 * commands 75-90 ms to load, one after the other; overlapped, a warm `run` of print(1) went from
 * 375 to 294 ms under gVisor and from 274 to 222 ms under runc (medians of 15, old and new
 * alternating). With both cores busy there is nothing idle to overlap: no gain, and no loss.
 * Whoever attaches to the container by the usual way claims the lock once and checks it is held
 * in the container it attached to; anything that goes wrong here leaves it to that way (the
 * engine is asked again there, and its failures said there).
 */
export class LockAhead {
  private readonly abort = new AbortController();
  private pending: Promise<HeldAhead | undefined> | undefined;
  private lock: SandboxLock | undefined;
  private lostNow: () => void = () => {};
  /** Resolves if the lock, held and not yet claimed, is lost (its container stopped or was removed). */
  readonly lost = new Promise<void>((resolve) => (this.lostNow = resolve));

  constructor(
    /** The engine's socket it is asked on (the caller compares it with the engine it resolves). */
    readonly socketPath: string,
    name: string,
    /**
     * `onlyIfFree`: taken only if nobody holds it, none if another process does. `spare`: the
     * container is a spare no session ran in (a keeper waiting with one, src/cli/standby.ts), so
     * its state is known empty to the session that takes it (a lost state is rebuilt there).
     */
    options: { onlyIfFree?: boolean; spare?: boolean } = {},
  ) {
    this.ofSpare = options.spare === true;
    this.pending = this.take(name, options.onlyIfFree === true);
  }

  readonly ofSpare: boolean;

  private async take(name: string, onlyIfFree: boolean): Promise<HeldAhead | undefined> {
    let lock: SandboxLock | undefined;
    try {
      // By name, at once (a container that is not there or not running refuses the exec); which
      // container holds it is asked of the exec once it holds it, while the rest still loads.
      const container = socketContainer(this.socketPath, name);
      lock = this.lock = new SandboxLock(container);
      lock.onLost = this.lostNow;
      if (onlyIfFree) {
        if (!(await lock.tryAcquire(this.abort.signal))) return undefined;
      } else await lock.acquire(this.abort.signal);
      const exec = lock.holderExecId;
      if (exec === undefined) throw new Error('the lock was let go');
      return { lock, containerId: await withDeadline(container.execContainer(exec), ENGINE_DEADLINE_MS, 'inspect lock exec') };
    } catch {
      // Never left held unclaimed: this process would wait for itself on the usual way.
      lock?.release();
      return undefined;
    }
  }

  /**
   * The lock, to the first caller only (later ones get undefined): waited for, as any lock is,
   * until it is free; `signal` gives it up. Undefined when none was taken (no such container, not
   * running, an engine that failed). The claimer takes it over or releases it.
   */
  claim(signal: AbortSignal): Promise<HeldAhead | undefined> {
    const pending = this.pending;
    this.pending = undefined;
    if (!pending) return Promise.resolve(undefined);
    // Given up at once, even while the engine has not answered a request yet (those wait for
    // their deadline, not for the signal): what they bring later is let go (take()).
    return new Promise((resolve) => {
      const onAbort = () => {
        this.cancel();
        resolve(undefined);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) onAbort();
      void pending.then((held) => {
        signal.removeEventListener('abort', onAbort);
        resolve(held);
      });
    });
  }

  /** The container the lock is held in, once it is, without taking it; undefined when none is held. */
  async heldIn(): Promise<string | undefined> {
    return (await this.pending)?.containerId;
  }

  /** Gives it up: a wait for it ends, and a lock held and not taken over is released. */
  cancel(): void {
    this.pending = undefined;
    this.abort.abort();
    this.lock?.release();
  }
}
