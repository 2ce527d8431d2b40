import type Dockerode from 'dockerode';
import { ToolError } from '../core/errors';
import type { Logger } from '../core/logger';
import type { ProgramExit, ProgramRun, Sandbox, SandboxProvider } from '../core/sandbox';
import { sessionDigest } from '../core/session';
import { DockerSandbox, removeQuietly, type SandboxSpec } from './dockerSandbox';
import { engineOf } from './connection';
import { engineUnreachable, isUnreachable, withDeadline } from './engineErrors';
import { ensureImage, type PullProgress } from './image';
import { LABEL, type Owner } from './labels';

export interface ProviderOptions {
  docker: Dockerode;
  owner: Owner;
  /**
   * Read at every acquire, so a changed setting applies to the next call. May be async (the
   * Dev Container backend builds or finds its image here); a ToolError it throws fails the call.
   */
  spec: (signal: AbortSignal) => SandboxSpec | Promise<SandboxSpec>;
  /** How to name the image setting in a model-facing error ("the setting codeactSandbox.image"). */
  imageSettingHint: string;
  log: Logger;
  /** Idle sandboxes are removed after this long; 0 keeps them until disposal. */
  idleMs: number;
  /** Called while an image is pulled; the VS Code layer shows a cancellable notification. */
  onPull?: (image: string, run: (progress: PullProgress, signal: AbortSignal) => Promise<void>) => Promise<void>;
  /**
   * For the CLI: find an existing sandbox of this session by label (reuse across processes)
   * instead of only those created by this process.
   */
  adoptExisting?: boolean;
}

/**
 * Keeps one sandbox per session key: created on first use, reused after, replaced when its
 * image or limits no longer match the settings or when it disappeared, removed when idle.
 */
export class DockerSandboxProvider implements SandboxProvider {
  private readonly sandboxes = new Map<string, DockerSandbox>();
  private readonly creating = new Map<string, Promise<DockerSandbox>>();
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
    return this.sandboxes;
  }

  async acquire(sessionKey: string, signal: AbortSignal): Promise<Sandbox> {
    if (this.disposed) throw new ToolError('sandbox_failed', 'The sandbox service is shutting down.');
    const spec = await this.options.spec(signal);
    const existing = this.sandboxes.get(sessionKey);
    if (existing && sameSpec(existing.spec, spec)) return this.retrying(sessionKey, existing);
    if (existing && !existing.busy) {
      this.options.log.info(`session sandbox ${existing.name} no longer matches the settings; replacing it`);
      this.sandboxes.delete(sessionKey);
      await existing.remove();
    }
    let pending = this.creating.get(sessionKey);
    if (!pending) {
      pending = this.create(sessionKey, spec, signal).finally(() => this.creating.delete(sessionKey));
      this.creating.set(sessionKey, pending);
    }
    return this.retrying(sessionKey, await pending);
  }

  prewarm(sessionKey: string): void {
    if (this.disposed || this.sandboxes.has(sessionKey) || this.creating.has(sessionKey)) return;
    this.acquire(sessionKey, new AbortController().signal).then(
      () => this.options.log.info(`sandbox for ${sessionKey} created ahead of its first call`),
      (e: unknown) => this.options.log.info(`creating the sandbox ahead of time failed (the call will retry): ${String((e as Error)?.message ?? e)}`),
    );
  }

  /**
   * Wraps a sandbox so that a container that vanished under us (docker rm -f, engine restart)
   * is recreated once and the program run again, instead of failing the call.
   */
  private retrying(sessionKey: string, sandbox: DockerSandbox): Sandbox {
    return {
      id: sandbox.id,
      image: sandbox.image,
      collect: (workDir, names, caps, sink) => sandbox.collect(workDir, names, caps, sink),
      run: async (run: ProgramRun): Promise<ProgramExit> => {
        try {
          return await sandbox.run(run);
        } catch (e) {
          if (!(e as { sandboxGone?: boolean })?.sandboxGone) throw e;
          this.options.log.warn(`sandbox ${sandbox.name} is gone; creating a new one`);
          if (this.sandboxes.get(sessionKey) === sandbox) this.sandboxes.delete(sessionKey);
          await sandbox.remove();
          await this.acquire(sessionKey, run.signal);
          // Once: the new sandbox's own failure is the call's failure (a program that kills its
          // sandbox must not make a loop of replacements).
          const fresh = this.sandboxes.get(sessionKey);
          if (!fresh) throw e;
          const exit = await fresh.run(run);
          return {
            ...exit,
            notes: [...(exit.notes ?? []), 'The sandbox had stopped and was replaced; files written by earlier calls are gone.'],
          };
        }
      },
    };
  }

  private async create(sessionKey: string, spec: SandboxSpec, signal: AbortSignal): Promise<DockerSandbox> {
    const { docker, log } = this.options;
    try {
      await withDeadline(docker.ping(), 10_000, 'Docker engine ping');
    } catch (e) {
      throw engineUnreachable(e, engineOf(docker));
    }
    const digest = sessionDigest(sessionKey);
    if (this.options.adoptExisting) {
      const adopted = await this.adopt(digest, spec);
      if (adopted) {
        this.sandboxes.set(sessionKey, adopted);
        return adopted;
      }
    }
    const pull = (progress: PullProgress, pullSignal: AbortSignal) =>
      ensureImage(docker, spec.image, this.options.imageSettingHint, { signal: pullSignal, onProgress: progress });
    if (this.options.onPull) {
      // Only a missing image needs the progress UI; inspect first so warm paths stay quiet.
      const present = await docker
        .getImage(spec.image)
        .inspect()
        .then(() => true)
        .catch((e: unknown) => {
          if (isUnreachable(e)) throw engineUnreachable(e, engineOf(docker));
          return false;
        });
      if (!present) await this.options.onPull(spec.image, (progress, pullSignal) => pull(progress, anySignal(signal, pullSignal)));
    } else {
      await pull(() => {}, signal);
    }
    if (signal.aborted) throw new ToolError('cancelled', 'The run was cancelled before it started.');
    const sandbox = await DockerSandbox.create(docker, spec, this.options.owner, digest, log);
    if (this.disposed) {
      await sandbox.remove();
      throw new ToolError('sandbox_failed', 'The sandbox service is shutting down.');
    }
    this.sandboxes.set(sessionKey, sandbox);
    return sandbox;
  }

  /** CLI sessions outlive the process: find the running container carrying this session's labels. */
  private async adopt(digest: string, spec: SandboxSpec): Promise<DockerSandbox | undefined> {
    const { docker, owner, log } = this.options;
    const found = await docker.listContainers({
      all: true,
      filters: { label: [`${LABEL.session}=${digest}`, `${LABEL.ownerKind}=${owner.kind}`] },
    });
    for (const c of found) {
      const sandbox = await DockerSandbox.attach(docker, c.Id, spec, log);
      if (sandbox) return sandbox;
      await removeQuietly(docker, c.Id, c.Names?.[0]?.replace(/^\//, ''), log);
    }
    return undefined;
  }

  private async removeIdle(): Promise<void> {
    const now = Date.now();
    for (const [key, sandbox] of this.sandboxes) {
      if (!sandbox.busy && now - sandbox.lastUsed >= this.options.idleMs) {
        this.sandboxes.delete(key);
        this.options.log.info(`sandbox ${sandbox.name} idle for ${Math.round((now - sandbox.lastUsed) / 1000)} s; removing it`);
        await sandbox.remove();
      }
    }
  }

  /** Removes the sandbox of one session (e.g. a CLI run without --session). */
  async release(sessionKey: string): Promise<void> {
    const sandbox = this.sandboxes.get(sessionKey);
    this.sandboxes.delete(sessionKey);
    await sandbox?.remove();
  }

  /** Removes everything this provider created and stops serving. */
  async dispose(): Promise<void> {
    this.disposed = true;
    if (this.idleTimer) clearInterval(this.idleTimer);
    await this.removeAll();
  }

  /** Removes every sandbox this provider created; the next call creates new ones. */
  async removeAll(): Promise<number> {
    const pending = [...this.creating.values()].map((p) => p.catch(() => undefined));
    const created = (await Promise.all(pending)).filter((s): s is DockerSandbox => s !== undefined);
    const all = new Set([...this.sandboxes.values(), ...created]);
    this.sandboxes.clear();
    await Promise.all([...all].map((s) => s.remove()));
    return all.size;
  }
}

function sameSpec(a: SandboxSpec, b: SandboxSpec): boolean {
  return (
    a.image === b.image &&
    JSON.stringify(a.limits) === JSON.stringify(b.limits) &&
    (a.warmRunner !== false) === (b.warmRunner !== false) &&
    JSON.stringify(a.preloadModules ?? null) === JSON.stringify(b.preloadModules ?? null)
  );
}

function anySignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  const controller = new AbortController();
  const abort = () => controller.abort();
  if (a.aborted || b.aborted) abort();
  a.addEventListener('abort', abort, { once: true });
  b.addEventListener('abort', abort, { once: true });
  return controller.signal;
}
