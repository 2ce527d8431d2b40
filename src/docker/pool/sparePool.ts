import { createHash, randomBytes } from 'node:crypto';
import type Dockerode from 'dockerode';
import { describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { DockerSandbox, attachSandbox, createSharedSandbox } from '../sandbox';
import { isNameTaken, readEngine, type RuntimeChoice } from '../engine';
import { LABEL, WORK_ROOT, removeQuietly, sameSpec, specKey, type Owner, type SandboxSpec } from '../container';

/** The session label of a spare: it has none yet, and a label cannot be changed later. */
export const SPARE_SESSION = 'spare';

/** How long a maker waits for a new spare's runner (gVisor with pandas preloaded: seconds on a slow machine). */
const SPARE_WARM_MS = 60_000;

/**
 * Which pool a spare belongs to: spares are interchangeable only for one spec, one resolved
 * runtime and one version of this tool (its runner is part of the container's command).
 */
export function poolDigest(spec: SandboxSpec, runtime: string, version: string): string {
  return createHash('sha256').update(JSON.stringify([specKey(spec), runtime, version])).digest('hex').slice(0, 12);
}

/** A spare that could not be made costs nothing but the log line: the next session makes its own. */
export function spareFailed(log: Logger, e: unknown): void {
  log.info(`creating a spare sandbox failed (a new session creates its own): ${describeError(e)}`);
}

export function spareLabels(pool: string): Record<string, string> {
  return { [LABEL.session]: SPARE_SESSION, [LABEL.pool]: pool };
}

export interface SpareSource {
  /** Creates one spare for `spec`: hardened, started, its runner preloading. */
  make(spec: SandboxSpec): Promise<DockerSandbox>;
  /** How many more sandboxes may be created now (Infinity: no limit). */
  room(): number;
  /** A spare was added or a fill ended (calls waiting for room look again). */
  changed(): void;
}

/**
 * Spares of one process (VS Code window, MCP server): sandboxes created, hardened and preloading
 * with no session, for the next new session to take. Made one at a time, so filling the pool
 * never takes more than one container's start-up of the engine's time at once.
 */
export class SparePool {
  private readonly spares: DockerSandbox[] = [];
  /** The spec the spares were (or are being) made for. */
  private spec: SandboxSpec | undefined;
  private filling: Promise<void> | undefined;
  /** Bumped by every drain: a fill of an older generation stops and removes what it made. */
  private generation = 0;
  /** The generation the fill under way belongs to. */
  private fillGeneration = -1;
  private closed = false;

  constructor(
    private readonly size: number,
    private readonly source: SpareSource,
    private readonly log: Logger,
  ) {}

  get sandboxes(): readonly DockerSandbox[] {
    return this.spares;
  }

  /** Spares being made right now (they count against the maximum as sandboxes do). */
  get inFlight(): number {
    return this.filling ? 1 : 0;
  }

  /**
   * A spare made for `spec`, preferring one whose runner finished preloading; undefined when
   * there is none. Spares of other settings are drained.
   */
  take(spec: SandboxSpec): DockerSandbox | undefined {
    this.noteSpec(spec);
    if (this.spares.length === 0) return undefined;
    const ready = this.spares.findIndex((s) => s.runner?.state === 'ready');
    return this.spares.splice(Math.max(0, ready), 1)[0];
  }

  /** Settings changed: spares made for the old ones are of no use to anyone, so they go now. */
  noteSpec(spec: SandboxSpec): void {
    if (this.spec && !sameSpec(this.spec, spec)) {
      this.log.info('the sandbox settings changed; replacing the spare sandboxes');
      void this.drain();
    }
  }

  /** Brings the pool up to its size for `spec`, in the background; resolves when that is done. */
  fill(spec: SandboxSpec): Promise<void> {
    if (this.size === 0 || this.closed) return Promise.resolve();
    this.noteSpec(spec);
    this.spec = spec;
    const generation = this.generation;
    const previous = this.filling;
    if (previous && this.fillGeneration === generation) return previous;
    const run = (async () => {
      await previous?.catch(() => {});
      while (generation === this.generation && !this.closed && this.spares.length < this.size && this.source.room() > 0) {
        const spare = await this.source.make(spec);
        if (generation !== this.generation || this.closed) {
          await spare.remove();
          return;
        }
        this.spares.push(spare);
        this.log.info(`spare sandbox ${spare.name} ready for the next new session`);
        this.source.changed();
      }
    })()
      .catch((e: unknown) => spareFailed(this.log, e))
      .finally(() => {
        if (this.filling === run) this.filling = undefined;
        this.source.changed();
      });
    this.filling = run;
    this.fillGeneration = generation;
    return run;
  }

  /**
   * Replaces the spares `stale` picks with spares for `spec`: once a spare being made has arrived
   * (it may be as stale), they are removed, and then the pool is topped up (so the old and the new
   * never count twice against the maximum). Resolves when that is done; never rejects.
   */
  async renew(spec: SandboxSpec, stale: (spare: DockerSandbox) => boolean): Promise<void> {
    await this.filling;
    const old = this.spares.filter(stale);
    for (const s of old) this.spares.splice(this.spares.indexOf(s), 1);
    if (old.length > 0) {
      this.log.info(`replacing ${old.length} spare sandbox(es) to preload what this window's programs imported`);
      await Promise.allSettled(old.map((s) => s.remove()));
      this.source.changed();
    }
    await this.fill(spec);
  }

  /** Removes every spare; a fill under way stops and removes what it was making. */
  async drain(): Promise<void> {
    this.generation++;
    this.spec = undefined;
    await Promise.all(this.spares.splice(0).map((s) => s.remove()));
  }

  /** Removes the spares and makes no more (disposal). */
  async close(): Promise<void> {
    this.closed = true;
    await this.drain();
    await this.filling;
  }

  /** Removes one spare (in the background) to make room for a session; false when there is none. */
  evictOne(): boolean {
    const spare = this.spares.shift();
    if (!spare) return false;
    this.log.info(`removing spare sandbox ${spare.name} to make room for a session`);
    void spare.remove().finally(() => this.source.changed());
    return true;
  }
}

/**
 * CLI sessions outlive their process, and so do their spares: the pool is on the engine, found by
 * its labels. A spare is named `codeact-cli-spare-<pool>-<random>` until a session takes it; the
 * session then renames it to its own name (`codeact-cli-<digest>`), which is how later processes
 * find it (by name first: the spare's session label still says "spare").
 */
export class SharedSparePool {
  constructor(
    private readonly docker: Dockerode,
    private readonly owner: Owner,
    private readonly log: Logger,
  ) {}

  private get namePrefix(): string {
    return `codeact-${this.owner.kind}-${SPARE_SESSION}-`;
  }

  /** Spares of `pool` that no session has taken yet: their names are still spare names. */
  private async list(pool?: string): Promise<Dockerode.ContainerInfo[]> {
    const label = [LABEL.managed, `${LABEL.ownerKind}=${this.owner.kind}`, `${LABEL.version}=${this.owner.version}`, pool ? `${LABEL.pool}=${pool}` : LABEL.pool];
    const found = await readEngine(() => this.docker.listContainers({ all: true, filters: { label } }), 'its list of spare sandboxes');
    return found.filter((c) => nameOf(c).startsWith(this.namePrefix));
  }

  /** The running spares of `pool` no session has taken, oldest first, by name (a CLI keeper waiting for a new session locks one). */
  async running(pool: string): Promise<string[]> {
    return (await this.list(pool)).filter((c) => c.State === 'running').sort((a, b) => a.Created - b.Created).map(nameOf);
  }

  /**
   * Takes a free spare of `pool` for the session whose sandbox is named `sessionName`: locked for
   * this process (try-lock: one another process is claiming is skipped, never waited for), checked
   * under the lock to still be a spare, and renamed. Undefined when there is none, or when the
   * session's name is already taken (another process created the session meanwhile: adopt that).
   */
  async claim(pool: string, spec: SandboxSpec, runtime: RuntimeChoice, sessionName: string, signal: AbortSignal): Promise<DockerSandbox | undefined> {
    // Only a running spare is free: one still being made belongs to its maker until it lets go
    // (taking it then would race the maker's own start and lock, and on a busy engine lose).
    for (const c of (await this.list(pool)).filter((c) => c.State === 'running')) {
      const attached = await attachSandbox(this.docker, c.Id, spec, runtime, this.log, signal, { onlyIfFree: true });
      if (attached.kind === 'busy' || attached.kind === 'gone') continue;
      if (attached.kind === 'unusable') {
        this.log.info(`spare sandbox ${nameOf(c)} ${attached.reason}; removing it`);
        await removeQuietly(this.docker, c.Id, attached.volume, this.log, c.Labels[LABEL.proxy]);
        continue;
      }
      const sandbox = attached.sandbox;
      if (!(await stillNamed(this.docker, c.Id, nameOf(c)))) {
        sandbox.detach();
        continue;
      }
      try {
        await sandbox.rename(sessionName);
      } catch (e) {
        sandbox.detach();
        if (isNameTaken(e)) return undefined;
        throw e;
      }
      this.log.info(`session sandbox ${sessionName} taken from the spares (it was ${nameOf(c)})`);
      // Ours by its name now, and no session ever ran in a spare: its state is known empty, so a
      // session that lost its sandbox has its state rebuilt in this one.
      sandbox.knownFresh();
      return sandbox;
    }
    return undefined;
  }

  /**
   * Makes spares of `pool` until there are `size`, and removes free spares this version made for
   * other settings (a changed image or limits drains the pool). Processes filling at once may
   * each make one: afterwards all but the `size` oldest are removed again by their makers.
   */
  async fill(pool: string, size: number, spec: SandboxSpec, runtime: RuntimeChoice): Promise<void> {
    for (const c of await this.list()) {
      if (c.Labels[LABEL.pool] === pool) continue;
      this.log.info(`removing spare sandbox ${nameOf(c)}: it was made for other settings`);
      await removeQuietly(this.docker, c.Id, volumeOf(c), this.log, c.Labels[LABEL.proxy]);
    }
    for (let have = (await this.list(pool)).length; have < size; have++) {
      const made = await createSharedSandbox({
        docker: this.docker,
        spec,
        runtime,
        owner: this.owner,
        sessionDigest: `${SPARE_SESSION}-${pool}-${randomBytes(2).toString('hex')}`,
        log: this.log,
        labels: spareLabels(pool),
      });
      if (!made) continue;
      // Ready means its runner has started Python and preloaded: a session that takes it sooner
      // would wait for that on its first call. Then nobody uses it until a session takes it: its
      // lock and runner are let go.
      await made.warmedUp(SPARE_WARM_MS);
      made.detach();
      // Every maker keeps the same `size` (the oldest): the others remove their own.
      const kept = (await this.list(pool)).sort((a, b) => a.Created - b.Created || a.Id.localeCompare(b.Id)).slice(0, size);
      if (!kept.some((c) => c.Id === made.id)) {
        await made.remove();
        return;
      }
      this.log.info(`spare sandbox ${made.name} ready for the next new session`);
    }
  }
}

function nameOf(c: Dockerode.ContainerInfo): string {
  return c.Names?.[0]?.replace(/^\//, '') ?? c.Id;
}

function volumeOf(c: Dockerode.ContainerInfo): string | undefined {
  return c.Mounts?.find((m) => m.Destination === WORK_ROOT)?.Name;
}

/**
 * Whether the spare `id` still has its spare's `name`, read once its lock is held: a session that
 * took it between a listing and the lock has renamed it (a failed read: not, as for one removed).
 */
export async function stillNamed(docker: Dockerode, id: string, name: string): Promise<boolean> {
  const now = await readEngine(() => docker.getContainer(id).inspect(), 'a spare sandbox (inspect)').then(
    (i) => i.Name,
    () => undefined,
  );
  return now === `/${name}`;
}
