/**
 * A spare that one process holds for the next new session that comes to it (the command line's
 * waiting keeper, src/cli/standby.ts). It is locked while it waits, so no other process takes it.
 * It is given to a session by being renamed to that session's sandbox name. The session's run then
 * finds it by that name, as every later run does, and takes over the lock held here (LockAhead)
 * instead of asking the sandbox for it again: that exec is the slowest step of a run's start.
 */
import type Dockerode from 'dockerode';
import { sessionDigest } from '../../core/session';
import { LockAhead, sharedSandboxName } from '../container';
import { ENGINE_DEADLINE_MS, isNameTaken, plainUnixSocket, withDeadline } from '../engine';
import { stillNamed } from './sparePool';

export class HeldSpare {
  private constructor(
    private readonly docker: Dockerode,
    /** Its lock, held; the session's run takes it over (ProviderWiring.lockAhead). */
    readonly lock: LockAhead,
    readonly id: string,
    readonly name: string,
  ) {}

  /**
   * Locks the first of the spares `names` that nobody holds (a try-lock: one another process is
   * claiming is skipped, never waited for) and that is still a spare once locked. Undefined when
   * there is none, or when the environment does not name the engine by a plain socket (the lock
   * is asked by name on that socket; whoever uses it checks it is the engine they resolved).
   */
  static async take(docker: Dockerode, names: readonly string[]): Promise<HeldSpare | undefined> {
    const socketPath = plainUnixSocket();
    if (socketPath === undefined) return undefined;
    for (const name of names) {
      const lock = new LockAhead(socketPath, name, { onlyIfFree: true, spare: true });
      const id = await lock.heldIn();
      if (id === undefined) continue;
      if (await stillNamed(docker, id, name)) return new HeldSpare(docker, lock, id, name);
      lock.cancel();
    }
    return undefined;
  }

  /**
   * Renames it to the sandbox name of the command line's session `sessionKey`; false when that
   * name is taken: that session has a sandbox.
   */
  async giveTo(sessionKey: string): Promise<boolean> {
    const name = sharedSandboxName('cli', sessionDigest(sessionKey));
    try {
      await withDeadline(this.docker.getContainer(this.id).rename({ name }), ENGINE_DEADLINE_MS, 'rename a spare sandbox');
      return true;
    } catch (e) {
      if (isNameTaken(e)) return false;
      throw e;
    }
  }

  /** Lets it go: a spare again, for whichever process claims it. */
  release(): void {
    this.lock.cancel();
  }
}
