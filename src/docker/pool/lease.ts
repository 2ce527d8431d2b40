import type { CollectOutcome, ProgramExit, ProgramRun, Sandbox } from '../../core/sandbox';
import type { DockerSandbox } from '../sandbox';
import { SandboxGoneError } from '../engine';

const GONE_NOTE = 'The sandbox had stopped and was replaced; files written by earlier calls are gone.';

/** A sandbox as the provider tracks it: the calls that hold it, and whether it is to go when they end. */
export interface Entry {
  /** The session whose sandbox it is. */
  key: string;
  sandbox: DockerSandbox;
  leases: number;
  retired: boolean;
  /** A spare taken by this session: the name it gets once its first call is over (for `docker ps`). */
  renameTo?: string;
}

/** What a lease asks of the provider it came from. */
export interface LeaseHolder {
  /** The call is over. */
  releaseLease(entry: Entry): Promise<void>;
  /** The sandbox vanished under the call: the session's new entry, held by this lease instead. */
  replaceGone(sessionKey: string, gone: Entry, signal: AbortSignal, why?: string): Promise<Entry>;
}

/**
 * What a call holds: the session's sandbox, and after a replacement the new one, so the
 * program's outputs are collected from (and the run record names) the sandbox that ran it.
 */
export class Lease implements Sandbox {
  private released = false;
  /** Found gone and replaced before the program ran (holdsNoState). */
  private gone = false;

  constructor(
    private readonly provider: LeaseHolder,
    private readonly sessionKey: string,
    private entry: Entry,
    /** Told with the first program's result (e.g. the session's sandbox had made room for another). */
    private notes: readonly string[] = [],
  ) {}

  get id(): string {
    return this.entry.sandbox.id;
  }

  get image(): string {
    return this.entry.sandbox.image;
  }

  get runtime(): string {
    return this.entry.sandbox.runtime;
  }

  get packagesSetting(): string | undefined {
    return this.entry.sandbox.packagesSetting;
  }

  installed(): ReturnType<NonNullable<Sandbox['installed']>> {
    return this.entry.sandbox.installed();
  }

  /**
   * The session's sandbox holds no state: a new one, or one found gone now and replaced. Gone is
   * asked of the engine only when the sandbox's runner link broke (its container stopped or was
   * removed since the last call); a live link answers without a round trip.
   */
  async holdsNoState(signal: AbortSignal): Promise<boolean> {
    const sandbox = this.entry.sandbox;
    if (sandbox.knownEmpty()) return true;
    const link = sandbox.runner;
    if ((link && link.state !== 'broken') || (await sandbox.isAlive())) return false;
    this.entry = await this.provider.replaceGone(this.sessionKey, this.entry, signal);
    // Told with the program's result unless the state is rebuilt: then the call says what came back.
    this.gone = true;
    return this.entry.sandbox.knownEmpty();
  }

  async renew(signal: AbortSignal, why: string): Promise<void> {
    this.entry = await this.provider.replaceGone(this.sessionKey, this.entry, signal, why);
  }

  async run(run: ProgramRun): Promise<ProgramExit> {
    const notes = this.gone && !run.stateRebuilt && run.workDir === undefined ? [...this.notes, GONE_NOTE] : this.notes;
    if (run.workDir === undefined) this.gone = false;
    this.notes = [];
    const exit = await this.runOnce(run);
    return notes.length ? { ...exit, notes: [...notes, ...(exit.notes ?? [])] } : exit;
  }

  private async runOnce(run: ProgramRun): Promise<ProgramExit> {
    try {
      return await this.entry.sandbox.run(run);
    } catch (e) {
      // A replayed run is one link of a state being rebuilt: it is not run alone in a new sandbox.
      if (!(e instanceof SandboxGoneError) || run.workDir !== undefined) throw e;
      this.entry = await this.provider.replaceGone(this.sessionKey, this.entry, run.signal);
      const rebuilt = (await run.rebuildState?.()) === true;
      // Once: the new sandbox's own failure is the call's failure (a program that kills its
      // sandbox must not make a loop of replacements).
      const exit = await this.entry.sandbox.run(run);
      return rebuilt ? exit : { ...exit, notes: [...(exit.notes ?? []), GONE_NOTE] };
    }
  }

  collect(...args: Parameters<Sandbox['collect']>): Promise<CollectOutcome> {
    return this.entry.sandbox.collect(...args);
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.provider.releaseLease(this.entry);
  }
}
