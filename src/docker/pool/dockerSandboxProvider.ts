import type Dockerode from 'dockerode';
import { ToolError, describeError } from '../../core/errors';
import type { Sandbox, SandboxProvider } from '../../core/sandbox';
import { sessionDigest } from '../../core/session';
import { DockerSandbox, engineSandboxes, type SandboxFactory } from '../sandbox';
import { engineIdentity, type RuntimeChoice } from '../engine';
import { ensureImage, imagePresent, proxyImageTag, type PullProgress } from '../images';
import { RoomWaiters, evictedNote, leastRecentlyUsedIdle } from './capacity';
import { Lease, type Entry, type LeaseHolder } from './lease';
import { adoptSession, createOrAdopt, namedSessionSandbox } from './sharedSessions';
import { sameSpec, sharedSandboxName, type SandboxSpec } from '../container';
import { keptRuntime, runtimeFor } from './runtimeFor';
import { SPARE_SESSION, SharedSparePool, SparePool, poolDigest, spareFailed, spareLabels } from './sparePool';
import { WindowModules } from './windowModules';
import { ChatImages, type PreparedImage } from './chatImages';
import type { ProviderOptions } from './providerOptions';
import { systemClock, type Clock, type Timer } from '../../core/clock';

export type { ProviderOptions };

/**
 * Keeps one sandbox per session key: created on first use, reused after, replaced when its
 * image or limits no longer match the settings or when it disappeared, removed when idle.
 * A call holds its sandbox from acquire to release: a sandbox whose settings changed or that idled
 * out is removed only once no call holds it.
 */
export class DockerSandboxProvider implements SandboxProvider, LeaseHolder {
  private readonly entries = new Map<string, Entry>();
  /** Replaced while a call held them: removed when the last such call releases them. */
  private readonly retiring = new Set<Entry>();
  private readonly creating = new Map<string, Promise<Entry>>();
  /** A kept session's sandbox, looked up by its name as its acquire began (beside the spec), for the adopt that follows. */
  private readonly namedAsked = new Map<string, Promise<Dockerode.ContainerInspectInfo | undefined>>();
  private idleTimer: Timer | undefined;
  private disposed = false;
  /** This process's spares (a provider that does not share sessions with other processes). */
  private readonly pool: SparePool | undefined;
  /** The engine's spares (sessions shared by processes), and the fill this process started. */
  private readonly sharedPool: SharedSparePool | undefined;
  private sharedFill: Promise<void> | undefined;
  /** Sessions this process claimed a spare for or made a sandbox for: the pool may be short by one. */
  private readonly madeHere = new WeakSet<Entry>();
  /** Sessions whose idle sandbox made room for another: their next call is told. */
  private readonly evicted = new Set<string>();
  private readonly roomWaiters = new RoomWaiters();
  private readonly sandboxes: SandboxFactory;
  private readonly clock: Clock;
  private readonly window = new WindowModules();
  /** The chats' prepared images (keepChatImages). */
  readonly chatImages: ChatImages | undefined;

  constructor(private readonly options: ProviderOptions) {
    this.sandboxes = options.sandboxes ?? engineSandboxes(options.docker, options.log);
    this.clock = options.clock ?? systemClock;
    if (options.keepChatImages && !options.adoptExisting) this.chatImages = new ChatImages(options.docker, options.log, options.chatRecords, options.chatImageLimits, () => this.clock.now());
    const spares = options.spareSandboxes ?? 0;
    if (spares > 0 && options.adoptExisting) this.sharedPool = new SharedSparePool(options.docker, options.owner, options.log);
    else if (spares > 0) {
      const source = { make: (spec: SandboxSpec) => this.makeSpare(spec), room: () => this.room(false), changed: () => this.roomWaiters.notify() };
      this.pool = new SparePool(spares, source, options.log);
    }
    if (options.idleMs > 0) {
      this.idleTimer = this.clock.setInterval(() => void this.removeIdle(), Math.min(options.idleMs, 60_000));
      this.idleTimer.unref();
    }
  }

  /** The engine this provider creates sandboxes on. */
  get docker(): Dockerode {
    return this.options.docker;
  }

  /** Sandboxes currently held, by session key (for status displays and tests). */
  get active(): ReadonlyMap<string, DockerSandbox> {
    return new Map([...this.entries].map(([key, e]) => [key, e.sandbox]));
  }

  /** This process's spares, oldest first (for tests and the bench). */
  get spares(): readonly DockerSandbox[] {
    return this.pool?.sandboxes ?? [];
  }

  /** Container ids of this process's spares, oldest first. */
  get spareIds(): string[] {
    return this.spares.map((s) => s.id);
  }

  /**
   * Creates the spares now (a host calls this at start-up, so even the first chat's first call is
   * warm), for `given` or the pre-warming spec. Like pre-warming it never asks, builds or pulls.
   * Resolves when they exist; never throws.
   */
  async fillSpares(given?: SandboxSpec): Promise<void> {
    if (!this.options.spareSandboxes) return;
    try {
      const spec = given ?? (this.options.prewarmSpec ? await this.options.prewarmSpec() : await this.options.spec(new AbortController().signal));
      if (!spec || this.disposed || !(await this.readyAhead(spec))) return;
      await this.refill(spec);
    } catch (e) {
      this.options.log.info(`creating spare sandboxes failed (a new session creates its own): ${describeError(e)}`);
    }
  }

  /** The engine's free spares for `spec` by name, oldest first (sessions shared by processes only). */
  async spareNames(spec: SandboxSpec): Promise<string[]> {
    if (!this.sharedPool) return [];
    const runtime = await this.runtimeFor(spec);
    return this.sharedPool.running(poolDigest(spec, runtime.name, this.options.owner.version));
  }

  /** Tops the pool up for `spec` in the background; resolves when that is done. */
  private refill(spec: SandboxSpec): Promise<void> {
    if (this.disposed) return Promise.resolve();
    if (this.pool) return this.pool.fill(spec);
    if (!this.sharedPool) return Promise.resolve();
    const previous = this.sharedFill ?? Promise.resolve();
    const run = previous.then(async () => {
      const runtime = await this.runtimeFor(spec);
      await this.sharedPool!.fill(poolDigest(spec, runtime.name, this.options.owner.version), this.options.spareSandboxes ?? 0, spec, runtime);
    });
    const settled = run.catch((e: unknown) => spareFailed(this.options.log, e));
    this.sharedFill = settled;
    return settled;
  }

  private async makeSpare(spec: SandboxSpec): Promise<DockerSandbox> {
    const { owner } = this.options;
    const runtime = await this.runtimeFor(spec);
    return this.sandboxes.create(this.window.ahead(spec), runtime, owner, SPARE_SESSION, spareLabels(poolDigest(spec, runtime.name, owner.version)));
  }

  /** Sandboxes replaced while a call still held them, not yet removed (for tests). */
  get retiringCount(): number {
    return this.retiring.size;
  }

  async acquire(sessionKey: string, signal: AbortSignal): Promise<Sandbox> {
    if (this.disposed) throw shuttingDown();
    // A kept session found again (the CLI's --session) is looked up by its name and the engine
    // pinged once its spec is known (adoptSession, keptRuntime); asked now, those round trips run
    // beside the spec's instead of after it. A failure is said where the answer is used, if it is.
    if (this.options.adoptExisting && !this.entries.has(sessionKey) && !this.creating.has(sessionKey)) {
      engineIdentity(this.options.docker).catch(() => {});
      const named = namedSessionSandbox(this.options, sessionDigest(sessionKey));
      named.catch(() => {});
      this.namedAsked.set(sessionKey, named);
    }
    let entry: Entry;
    try {
      const spec = await this.options.spec(signal);
      this.pool?.noteSpec(spec);
      entry = await this.entryFor(sessionKey, spec, signal);
    } finally {
      // Used by the adopt that followed, if any: a later acquire asks again.
      this.namedAsked.delete(sessionKey);
    }
    const evicted = this.evicted.delete(sessionKey) && this.options.maxSandboxes !== undefined;
    return new Lease(this, sessionKey, entry, evicted ? [evictedNote(this.options.maxSandboxes!)] : []);
  }

  /** How many more sandboxes may be made now; `withFill`: counting a spare being made too. */
  private room(withFill = true): number {
    const max = this.options.maxSandboxes;
    if (max === undefined) return Infinity;
    const pool = this.pool ? this.pool.sandboxes.length + (withFill ? this.pool.inFlight : 0) : 0;
    return max - (this.entries.size + this.retiring.size + this.creating.size + pool);
  }

  /**
   * Makes room for one more sandbox without waiting: a spare goes first, then the sandbox of the
   * session used longest ago that no call holds. False when every sandbox is in use.
   */
  private evictOne(): boolean {
    if (this.pool?.evictOne()) return true;
    const lru = leastRecentlyUsedIdle(this.entries);
    if (!lru) return false;
    const [key, entry] = lru;
    this.entries.delete(key);
    this.evicted.add(key);
    this.options.log.info(`removing the idle sandbox ${entry.sandbox.name} to make room (at most ${this.options.maxSandboxes} sandboxes)`);
    void this.retire(entry).finally(() => this.roomWaiters.notify());
    return true;
  }

  prewarm(sessionKey: string): void {
    if (this.disposed || this.entries.has(sessionKey) || this.creating.has(sessionKey)) return;
    void this.prewarmNow(sessionKey).then(
      (created) => created && this.options.log.info(`sandbox for ${sessionKey} created ahead of its first call`),
      (e: unknown) => this.options.log.info(`creating the sandbox ahead of time failed (the call will retry): ${describeError(e)}`),
    );
  }

  sessionSandbox(sessionKey: string): { id: string; mayHoldState: boolean } | undefined {
    const entry = this.entries.get(sessionKey);
    // A retired one is replaced at the session's next call.
    if (!entry || entry.retired) return undefined;
    return { id: entry.sandbox.id, mayHoldState: !entry.sandbox.knownEmpty() };
  }

  /** Never asks, builds or pulls: only an image already on the engine gets a sandbox ahead of time. */
  private async prewarmNow(sessionKey: string): Promise<boolean> {
    const spec = this.options.prewarmSpec ? await this.options.prewarmSpec() : await this.options.spec(new AbortController().signal);
    if (!spec || this.disposed || this.entries.has(sessionKey) || this.creating.has(sessionKey)) return false;
    if (!(await this.readyAhead(spec))) {
      this.options.log.info(`not creating a sandbox ahead of time: ${spec.image}${spec.network ? ' or the network proxy' : ''} is not on the engine yet`);
      return false;
    }
    const entry = await this.entryFor(sessionKey, this.window.ahead(spec), new AbortController().signal, false);
    if (!entry) return false;
    // Nobody holds it yet; the first call takes it.
    entry.leases--;
    if (this.options.adoptExisting && !this.options.keepLock) await entry.sandbox.unlock();
    return true;
  }

  /**
   * The session's entry for `spec`, with one more lease on it. At the maximum, waits for room
   * (`wait`), or gives undefined.
   */
  private async entryFor(sessionKey: string, spec: SandboxSpec, signal: AbortSignal): Promise<Entry>;
  private async entryFor(sessionKey: string, spec: SandboxSpec, signal: AbortSignal, wait: false): Promise<Entry | undefined>;
  private async entryFor(sessionKey: string, spec: SandboxSpec, signal: AbortSignal, wait = true): Promise<Entry | undefined> {
    // Asked before anything is read below: from there to the claim nothing awaits.
    const prepared = this.chatImages && !this.creating.has(sessionKey) && !this.entries.has(sessionKey) ? await this.chatImages.imageFor(sessionDigest(sessionKey), spec) : undefined;
    const existing = this.entries.get(sessionKey);
    if (existing && sameSpec(existing.sandbox.spec, spec)) {
      existing.leases++;
      return existing;
    }
    if (existing) {
      this.options.log.info(`session sandbox ${existing.sandbox.name} no longer matches the settings; replacing it`);
      this.entries.delete(sessionKey);
      await this.retire(existing);
    }
    let pending = this.creating.get(sessionKey);
    // A chat with a prepared image gets a sandbox made from it, not a spare made from the settings' image.
    const spare = pending || prepared ? undefined : this.pool?.take(spec);
    if (spare) {
      const entry = this.track(sessionKey, spare);
      entry.leases++;
      this.options.log.info(`session ${sessionKey} took spare sandbox ${spare.name}`);
      // Only for people reading `docker ps`: nothing finds a sandbox of this process by its name.
      // Renamed after the call, not during it: the engine's rename took the first call from 5 to
      // 9-10 ms (bench image, runc).
      entry.renameTo = `codeact-${sessionDigest(sessionKey).slice(0, 12)}-${spare.name.slice(-6)}`;
      return entry;
    }
    let told = false;
    while (!pending) {
      // Checked and claimed with no await in between, so two calls cannot both take the last room.
      if (this.room() > 0) {
        // The maker's lease is taken as the entry is made, before the calls waiting for room look
        // again: else the first of them would find the new sandbox idle and remove it to make room.
        const made = this.create(sessionKey, spec, signal, prepared).then((entry) => {
          entry.leases++;
          return entry;
        });
        const claimed = made.finally(() => {
          this.creating.delete(sessionKey);
          this.roomWaiters.notify();
        });
        this.creating.set(sessionKey, claimed);
        return claimed;
      }
      if (this.evictOne()) continue;
      if (!wait) return undefined;
      if (!told) this.options.log.info(`all ${this.options.maxSandboxes} sandboxes are in use; ${sessionKey} waits for one`);
      told = true;
      await this.roomWaiters.wait(signal);
      pending = this.creating.get(sessionKey);
    }
    const entry = await pending;
    entry.leases++;
    return entry;
  }

  /** Removes the entry's sandbox now, or when the last call that holds it releases it. */
  private async retire(entry: Entry): Promise<void> {
    entry.retired = true;
    if (entry.leases > 0) {
      this.retiring.add(entry);
      return;
    }
    this.retiring.delete(entry);
    await entry.sandbox.remove();
    void this.removedFrom([entry.sandbox]);
    this.roomWaiters.notify();
  }

  /** @internal Called by a lease when its call is over. */
  async releaseLease(entry: Entry): Promise<void> {
    entry.leases = Math.max(0, entry.leases - 1);
    entry.sandbox.lastUsed = this.clock.now();
    if (entry.leases > 0) return;
    // An idle sandbox can make room for a call that waits.
    this.roomWaiters.notify();
    if (entry.retired) await this.retire(entry);
    else if (this.options.adoptExisting && !this.options.keepLock) await entry.sandbox.unlock();
    else entry.sandbox.forkNextAhead();
    // After the call, not during it: making a spare costs the engine and the CPU the call ran on.
    if (!entry.retired) this.afterCall(entry);
  }

  private afterCall(entry: Entry): void {
    if (this.chatImages && entry.sandbox.takeStateKept()) this.chatImages.afterCall(sessionDigest(entry.key), entry.sandbox);
    const name = entry.renameTo;
    if (name) {
      entry.renameTo = undefined;
      void entry.sandbox.rename(name).catch((e: unknown) => this.options.log.info(`could not rename ${entry.sandbox.name} to ${name}: ${describeError(e)}`));
    }
    const maker = this.options.spareMaker;
    if (!maker || !this.sharedPool) {
      // The chat's runner starts over to preload what its program imported: spares made without it go.
      const learned = this.window.note(entry.sandbox.runner?.learned, entry.sandbox.spec);
      if (learned && this.pool && !this.disposed) void this.pool.renew(entry.sandbox.spec, (s) => this.window.behind(s.spec));
      else void this.refill(entry.sandbox.spec);
      return;
    }
    // Only a new session can have taken the engine's spare; a kept session's call asks nothing more.
    if (this.madeHere.delete(entry)) maker(entry.sandbox.spec);
  }

  /**
   * @internal A lease's sandbox vanished under it (docker rm -f, engine restart): drop it and give
   * the session a new one, which the lease then holds instead.
   */
  async replaceGone(sessionKey: string, gone: Entry, signal: AbortSignal, why?: string): Promise<Entry> {
    if (why) this.options.log.info(`sandbox ${gone.sandbox.name} is replaced: ${why}`);
    else this.options.log.warn(`sandbox ${gone.sandbox.name} is gone; creating a new one`);
    if (this.entries.get(sessionKey) === gone) this.entries.delete(sessionKey);
    gone.leases = Math.max(0, gone.leases - 1);
    this.retiring.delete(gone);
    await gone.sandbox.remove();
    void this.removedFrom([gone.sandbox]);
    return this.entryFor(sessionKey, gone.sandbox.spec, signal);
  }

  private imagePresent(image: string): Promise<boolean> {
    return imagePresent(this.options.docker, image);
  }

  /** Whether a sandbox of `spec` can be made ahead of time: nothing to pull or build (the proxy's image included). */
  private async readyAhead(spec: SandboxSpec): Promise<boolean> {
    return (await this.imagePresent(spec.image)) && (!spec.network || (await this.imagePresent(proxyImageTag().tag)));
  }

  private async create(sessionKey: string, spec: SandboxSpec, signal: AbortSignal, prepared?: PreparedImage): Promise<Entry> {
    const { docker } = this.options;
    const digest = sessionDigest(sessionKey);
    if (this.options.adoptExisting) {
      // A kept session's sandbox says which runtime it runs under: the engine is not asked again.
      const asked = this.namedAsked.get(sessionKey);
      this.namedAsked.delete(sessionKey);
      const adopted = await adoptSession(this.options, digest, spec, (labels) => keptRuntime(this.options, spec, labels), signal, asked);
      if (adopted) return this.track(sessionKey, adopted);
    }
    const runtime = await this.runtimeFor(spec, true);
    if (this.options.adoptExisting) {
      const pool = poolDigest(spec, runtime.name, this.options.owner.version);
      const claimed = await this.sharedPool?.claim(pool, spec, runtime, sharedSandboxName(this.options.owner.kind, digest), signal);
      if (claimed) return this.madeNow(this.track(sessionKey, claimed));
    }
    const pull = (progress: PullProgress, pullSignal: AbortSignal) =>
      ensureImage(docker, spec.image, this.options.imageSettingHint, { signal: pullSignal, onProgress: progress });
    if (this.options.onPull) {
      // Only a missing image needs the progress UI; inspect first so warm paths stay quiet.
      if (!(await this.imagePresent(spec.image))) {
        await this.options.onPull(spec.image, (progress, pullSignal) => pull(progress, AbortSignal.any([signal, pullSignal])));
      }
    } else {
      await pull(() => {}, signal);
    }
    if (signal.aborted) throw new ToolError('cancelled', 'The run was cancelled before it started.');
    let sandbox: DockerSandbox;
    if (this.options.adoptExisting) {
      sandbox = await createOrAdopt(this.options, digest, spec, runtime, signal);
    } else {
      sandbox = await this.sandboxes.create(spec, runtime, this.options.owner, digest, undefined, prepared?.tag);
      if (prepared) {
        sandbox.tellFirstProgram(prepared.note);
        sandbox.fromChatImage = true;
      }
    }
    if (this.disposed) {
      await sandbox.remove();
      throw shuttingDown();
    }
    return this.madeNow(this.track(sessionKey, sandbox));
  }

  private madeNow(entry: Entry): Entry {
    this.madeHere.add(entry);
    return entry;
  }

  private runtimeFor(spec: SandboxSpec, logChoice = false): Promise<RuntimeChoice> {
    return runtimeFor(this.options, spec, logChoice);
  }

  private track(sessionKey: string, sandbox: DockerSandbox): Entry {
    const entry: Entry = { key: sessionKey, sandbox, leases: 0, retired: false };
    this.entries.set(sessionKey, entry);
    return entry;
  }

  private async removeIdle(): Promise<void> {
    const now = this.clock.now();
    for (const [key, entry] of this.entries) {
      if (entry.leases === 0 && now - entry.sandbox.lastUsed >= this.options.idleMs) {
        this.entries.delete(key);
        this.options.log.info(`sandbox ${entry.sandbox.name} idle for ${Math.round((now - entry.sandbox.lastUsed) / 1000)} s; removing it`);
        await this.retire(entry);
      }
    }
  }

  /** Removes the sandbox of one session (e.g. a CLI run without --session). */
  async release(sessionKey: string): Promise<void> {
    const entry = this.entries.get(sessionKey);
    this.entries.delete(sessionKey);
    await entry?.sandbox.remove();
  }

  /** Removes everything this provider created and stops serving. */
  async dispose(): Promise<void> {
    this.disposed = true;
    this.chatImages?.dispose();
    this.clock.clearInterval(this.idleTimer);
    await this.removeAll();
    await this.pool?.close();
    await this.sharedFill;
  }

  /** Lets go of every sandbox without removing it (CLI sessions: kept for the next process). */
  async detachAll(): Promise<void> {
    // Spares this process is making are made before it goes (the call's answer is out already);
    // with a spareMaker there are none.
    await this.sharedFill;
    this.disposed = true;
    this.clock.clearInterval(this.idleTimer);
    await Promise.all([...this.entries.values()].map((e) => e.sandbox.detach()));
    this.entries.clear();
    await this.pool?.close();
  }

  /** A chat's records were deleted (undefined: every chat's): its prepared image goes with them. */
  async forgetChat(session: string | undefined): Promise<void> {
    if (!this.chatImages) return;
    await (session === undefined ? this.chatImages.removeAll() : this.chatImages.remove(session));
  }

  /** Removes every sandbox this provider created; the next call creates new ones. */
  async removeAll(): Promise<number> {
    const pending = [...this.creating.values()].map((p) => p.catch(() => undefined));
    const created = (await Promise.all(pending)).filter((e): e is Entry => e !== undefined);
    const all = new Set([...this.entries.values(), ...this.retiring, ...created].map((e) => e.sandbox));
    this.entries.clear();
    this.retiring.clear();
    await Promise.all([...all].map((s) => s.remove()));
    await this.pool?.drain();
    await this.removedFrom(all);
    return all.size;
  }

  /** Sandboxes went: a chat image that lost its name while one of them ran from it goes now. */
  private async removedFrom(sandboxes: Iterable<DockerSandbox>): Promise<void> {
    if (this.chatImages && [...sandboxes].some((s) => s.fromChatImage)) await this.chatImages.sweep();
  }
}


function shuttingDown(): ToolError {
  return new ToolError('sandbox_failed', 'The sandbox service is shutting down.');
}

