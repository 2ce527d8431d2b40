import type Dockerode from 'dockerode';
import { ToolError, describeError } from '../core/errors';
import type { Logger } from '../core/logger';
import type { CollectOutcome, ProgramExit, ProgramRun, Sandbox, SandboxProvider } from '../core/sandbox';
import { sessionDigest } from '../core/session';
import { DockerSandbox, removeQuietly, type SandboxSpec } from './dockerSandbox';
import { engineOf } from './connection';
import { SandboxGoneError, engineUnreachable, isUnreachable, withDeadline } from './engineErrors';
import { ensureImage, type PullProgress } from './image';
import { LABEL, type Owner } from './labels';
import { chooseRuntime, engineRuntimes, type RuntimeChoice } from './engine/runtime';

export interface ProviderOptions {
  docker: Dockerode;
  owner: Owner;
  /**
   * Read at every acquire, so a changed setting applies to the next call. May be async (the
   * Dev Container backend builds or finds its image here); a ToolError it throws fails the call.
   */
  spec: (signal: AbortSignal) => SandboxSpec | Promise<SandboxSpec>;
  /**
   * For pre-warming: the spec when it can be had without asking the user, building or pulling,
   * else undefined (then nothing is created ahead of the call). Without it, pre-warming uses
   * `spec`, which must then be free of such effects (the CLI's and the tests' are).
   */
  prewarmSpec?: () => Promise<SandboxSpec | undefined>;
  /** How to name the image setting in a model-facing error ("the setting codeactSandbox.image"). */
  imageSettingHint: string;
  /** How to name the runtime setting in a model-facing error (default: "the runtime setting"). */
  runtimeSettingHint?: string;
  log: Logger;
  /** Idle sandboxes are removed after this long; 0 keeps them until disposal. */
  idleMs: number;
  /** Called while an image is pulled; the VS Code layer shows a cancellable notification. */
  onPull?: (image: string, run: (progress: PullProgress, signal: AbortSignal) => Promise<void>) => Promise<void>;
  /**
   * For the CLI: sessions outlive the process. The session's sandbox is found by its labels (or
   * created under a name derived from the session, so two processes cannot create two), and each
   * process holds the sandbox's cross-process lock from acquire until it releases the sandbox or
   * is disposed: runs of one session never overlap, whichever process starts them.
   */
  adoptExisting?: boolean;
}

/** A sandbox as the provider tracks it: the calls that hold it, and whether it is to go when they end. */
interface Entry {
  sandbox: DockerSandbox;
  leases: number;
  retired: boolean;
}

/**
 * Keeps one sandbox per session key: created on first use, reused after, replaced when its
 * image or limits no longer match the settings or when it disappeared, removed when idle.
 * A call holds its sandbox from acquire to release: a sandbox whose settings changed or that idled
 * out is removed only once no call holds it.
 */
export class DockerSandboxProvider implements SandboxProvider {
  private readonly entries = new Map<string, Entry>();
  /** Replaced while a call held them: removed when the last such call releases them. */
  private readonly retiring = new Set<Entry>();
  private readonly creating = new Map<string, Promise<Entry>>();
  private idleTimer: NodeJS.Timeout | undefined;
  private disposed = false;

  constructor(private readonly options: ProviderOptions) {
    if (options.idleMs > 0) {
      this.idleTimer = setInterval(() => void this.removeIdle(), Math.min(options.idleMs, 60_000));
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

  /** Sandboxes replaced while a call still held them, not yet removed (for tests). */
  get retiringCount(): number {
    return this.retiring.size;
  }

  async acquire(sessionKey: string, signal: AbortSignal): Promise<Sandbox> {
    if (this.disposed) throw shuttingDown();
    const spec = await this.options.spec(signal);
    return new Lease(this, sessionKey, await this.entryFor(sessionKey, spec, signal));
  }

  prewarm(sessionKey: string): void {
    if (this.disposed || this.entries.has(sessionKey) || this.creating.has(sessionKey)) return;
    void this.prewarmNow(sessionKey).then(
      (created) => created && this.options.log.info(`sandbox for ${sessionKey} created ahead of its first call`),
      (e: unknown) => this.options.log.info(`creating the sandbox ahead of time failed (the call will retry): ${describeError(e)}`),
    );
  }

  /** Never asks, builds or pulls: only an image already on the engine gets a sandbox ahead of time. */
  private async prewarmNow(sessionKey: string): Promise<boolean> {
    const spec = this.options.prewarmSpec ? await this.options.prewarmSpec() : await this.options.spec(new AbortController().signal);
    if (!spec || this.disposed || this.entries.has(sessionKey) || this.creating.has(sessionKey)) return false;
    if (!(await this.imagePresent(spec.image))) {
      this.options.log.info(`not creating a sandbox ahead of time: ${spec.image} is not on the engine yet`);
      return false;
    }
    const entry = await this.entryFor(sessionKey, spec, new AbortController().signal);
    // Nobody holds it yet; the first call takes it.
    entry.leases--;
    if (this.options.adoptExisting) await entry.sandbox.unlock();
    return true;
  }

  /** The session's entry for `spec`, with one more lease on it. */
  private async entryFor(sessionKey: string, spec: SandboxSpec, signal: AbortSignal): Promise<Entry> {
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
    if (!pending) {
      pending = this.create(sessionKey, spec, signal).finally(() => this.creating.delete(sessionKey));
      this.creating.set(sessionKey, pending);
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
  }

  /** @internal Called by a lease when its call is over. */
  async releaseLease(entry: Entry): Promise<void> {
    entry.leases = Math.max(0, entry.leases - 1);
    entry.sandbox.lastUsed = Date.now();
    if (entry.leases > 0) return;
    if (entry.retired) await this.retire(entry);
    else if (this.options.adoptExisting) await entry.sandbox.unlock();
  }

  /**
   * @internal A lease's sandbox vanished under it (docker rm -f, engine restart): drop it and give
   * the session a new one, which the lease then holds instead.
   */
  async replaceGone(sessionKey: string, gone: Entry, signal: AbortSignal): Promise<Entry> {
    this.options.log.warn(`sandbox ${gone.sandbox.name} is gone; creating a new one`);
    if (this.entries.get(sessionKey) === gone) this.entries.delete(sessionKey);
    gone.leases = Math.max(0, gone.leases - 1);
    this.retiring.delete(gone);
    await gone.sandbox.remove();
    return this.entryFor(sessionKey, gone.sandbox.spec, signal);
  }

  private async imagePresent(image: string): Promise<boolean> {
    const { docker } = this.options;
    return docker
      .getImage(image)
      .inspect()
      .then(() => true)
      .catch((e: unknown) => {
        if (isUnreachable(e)) throw engineUnreachable(e, engineOf(docker));
        return false;
      });
  }

  private async create(sessionKey: string, spec: SandboxSpec, signal: AbortSignal): Promise<Entry> {
    const { docker, log } = this.options;
    try {
      await withDeadline(docker.ping(), 10_000, 'Docker engine ping');
    } catch (e) {
      throw engineUnreachable(e, engineOf(docker));
    }
    const digest = sessionDigest(sessionKey);
    const { available, engineDefault } = await engineRuntimes(docker).catch((e: unknown) => {
      throw isUnreachable(e) ? engineUnreachable(e, engineOf(docker)) : e;
    });
    const runtime = chooseRuntime(spec.runtime, available, engineDefault, this.options.runtimeSettingHint ?? 'the runtime setting');
    if (spec.runtime !== undefined) log.info(`runtime ${runtime.name} (${runtime.reason}); the engine has ${available.join(', ') || 'no runtimes listed'}`);
    if (this.options.adoptExisting) {
      const adopted = await this.adopt(digest, spec, runtime, signal);
      if (adopted) return this.track(sessionKey, adopted);
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
      sandbox = await this.createOrAdopt(digest, spec, runtime, signal);
    } else {
      sandbox = await DockerSandbox.create(docker, spec, runtime, this.options.owner, digest, log);
    }
    if (this.disposed) {
      await sandbox.remove();
      throw shuttingDown();
    }
    return this.track(sessionKey, sandbox);
  }

  /**
   * Of processes creating a session's sandbox at once, one creates it (its name comes from the
   * session) and the others adopt it. The engine reserves a name before the container is listed,
   * so a loser may find nothing for a moment: it looks again, and creates anew if the winner gave up.
   */
  private async createOrAdopt(digest: string, spec: SandboxSpec, runtime: RuntimeChoice, signal: AbortSignal): Promise<DockerSandbox> {
    const { docker, log, owner } = this.options;
    const giveUp = Date.now() + SHARED_CREATE_WAIT_MS;
    while (Date.now() < giveUp) {
      const made = await DockerSandbox.createShared(docker, spec, runtime, owner, digest, log);
      if (made) return made;
      for (let i = 0; i < 20; i++) {
        const adopted = await this.adopt(digest, spec, runtime, signal);
        if (adopted) return adopted;
        if (signal.aborted) throw new ToolError('cancelled', 'The run was cancelled before it started.');
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    throw new ToolError('sandbox_failed', SANDBOX_FAILED);
  }

  private track(sessionKey: string, sandbox: DockerSandbox): Entry {
    const entry: Entry = { sandbox, leases: 0, retired: false };
    this.entries.set(sessionKey, entry);
    return entry;
  }

  /**
   * CLI sessions outlive the process: the running container carrying this session's labels,
   * locked for this process. A container that does not match the settings, or is really gone or
   * unusable, is removed; an engine that fails to answer fails the call and removes nothing.
   */
  private async adopt(digest: string, spec: SandboxSpec, runtime: RuntimeChoice, signal: AbortSignal): Promise<DockerSandbox | undefined> {
    const { docker, owner, log } = this.options;
    const found = await docker.listContainers({
      all: true,
      filters: { label: [`${LABEL.session}=${digest}`, `${LABEL.ownerKind}=${owner.kind}`] },
    });
    for (const c of found) {
      const name = c.Names?.[0]?.replace(/^\//, '');
      const attached = await DockerSandbox.attach(docker, c.Id, spec, runtime, log, signal);
      if (attached.kind === 'attached') return attached.sandbox;
      if (attached.kind === 'gone') continue;
      log.info(`sandbox ${name ?? c.Id} of this session ${attached.reason}; removing it`);
      await removeQuietly(docker, c.Id, attached.volume ?? name, log);
    }
    return undefined;
  }

  private async removeIdle(): Promise<void> {
    const now = Date.now();
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
    if (this.idleTimer) clearInterval(this.idleTimer);
    await this.removeAll();
  }

  /** Lets go of every sandbox without removing it (CLI sessions: kept for the next process). */
  async detachAll(): Promise<void> {
    this.disposed = true;
    if (this.idleTimer) clearInterval(this.idleTimer);
    await Promise.all([...this.entries.values()].map((e) => e.sandbox.detach()));
    this.entries.clear();
  }

  /** Removes every sandbox this provider created; the next call creates new ones. */
  async removeAll(): Promise<number> {
    const pending = [...this.creating.values()].map((p) => p.catch(() => undefined));
    const created = (await Promise.all(pending)).filter((e): e is Entry => e !== undefined);
    const all = new Set([...this.entries.values(), ...this.retiring, ...created].map((e) => e.sandbox));
    this.entries.clear();
    this.retiring.clear();
    await Promise.all([...all].map((s) => s.remove()));
    return all.size;
  }
}

/**
 * What a call holds: the session's sandbox, and after a replacement the new one, so the
 * program's outputs are collected from (and the run record names) the sandbox that ran it.
 */
class Lease implements Sandbox {
  private released = false;

  constructor(
    private readonly provider: DockerSandboxProvider,
    private readonly sessionKey: string,
    private entry: Entry,
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

  async run(run: ProgramRun): Promise<ProgramExit> {
    try {
      return await this.entry.sandbox.run(run);
    } catch (e) {
      if (!(e instanceof SandboxGoneError)) throw e;
      this.entry = await this.provider.replaceGone(this.sessionKey, this.entry, run.signal);
      // Once: the new sandbox's own failure is the call's failure (a program that kills its
      // sandbox must not make a loop of replacements).
      const exit = await this.entry.sandbox.run(run);
      return { ...exit, notes: [...(exit.notes ?? []), 'The sandbox had stopped and was replaced; files written by earlier calls are gone.'] };
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

/** How long processes racing to create one session's sandbox keep trying before the call fails. */
const SHARED_CREATE_WAIT_MS = 30_000;
const SANDBOX_FAILED = 'The sandbox could not be created. Ask the user to check the "CodeAct Sandbox" output channel.';

function shuttingDown(): ToolError {
  return new ToolError('sandbox_failed', 'The sandbox service is shutting down.');
}


function sameSpec(a: SandboxSpec, b: SandboxSpec): boolean {
  return (
    a.image === b.image &&
    JSON.stringify(a.limits) === JSON.stringify(b.limits) &&
    (a.warmRunner !== false) === (b.warmRunner !== false) &&
    JSON.stringify(a.preloadModules ?? null) === JSON.stringify(b.preloadModules ?? null) &&
    a.runtime === b.runtime &&
    a.packagesSetting === b.packagesSetting
  );
}
