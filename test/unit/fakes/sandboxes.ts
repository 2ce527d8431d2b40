// Sandboxes without an engine, for the provider's bookkeeping (src/docker/dockerSandboxProvider.ts):
// each records what is done to it in one shared list of events, and creations can be held open.
import type { CollectOutcome, ProgramExit, ProgramRun } from '../../../src/core/sandbox';
import type { Clock } from '../../../src/core/clock';
import type { SandboxSpec } from '../../../src/docker/container/spec';
import type { DockerSandbox } from '../../../src/docker/sandbox/dockerSandbox';
import type { RuntimeChoice } from '../../../src/docker/engine/runtime';
import type { Owner } from '../../../src/docker/container/labels';
import type { RunnerState } from '../../../src/docker/run/runnerChannel';
import type { SandboxFactory } from '../../../src/docker/sandbox/factory';

/** What the provider, its leases and its spare pool use of a sandbox (the runner only for its state). */
type Used = 'id' | 'name' | 'spec' | 'lastUsed' | 'image' | 'runtime' | 'packagesSetting' | 'installed' | 'run' | 'collect' | 'remove' | 'rename' | 'unlock' | 'detach' | 'forkNextAhead';

export const WORK_DIR = '/sandbox/runs/0001-abcdef';

export class FakeSandbox implements Pick<DockerSandbox, Used> {
  removed = false;
  /** As a spare's runner reads to the pool: 'ready' once it preloaded. */
  runner: { state: RunnerState } | undefined = { state: 'connecting' };
  /** What a program run does here; the default exits 0. */
  behaviour: (run: ProgramRun) => Promise<ProgramExit> = async () => ({ exitCode: 0, workDir: WORK_DIR });

  constructor(
    readonly id: string,
    public name: string,
    readonly spec: SandboxSpec,
    readonly runtimeChoice: RuntimeChoice,
    /** The labels it was created with beyond the owner's. */
    readonly labels: Record<string, string>,
    public lastUsed: number,
    private readonly events: string[],
  ) {}

  get image(): string {
    return this.spec.image;
  }

  get runtime(): string {
    return this.runtimeChoice.name;
  }

  get packagesSetting(): string | undefined {
    return this.spec.packagesSetting;
  }

  async installed(): Promise<undefined> {
    return undefined;
  }

  async run(run: ProgramRun): Promise<ProgramExit> {
    this.events.push(`run ${this.id}`);
    run.onStart();
    return this.behaviour(run);
  }

  async collect(): Promise<CollectOutcome> {
    this.events.push(`collect ${this.id}`);
    return { saved: [], missing: [], refused: [] };
  }

  async remove(): Promise<void> {
    this.events.push(`remove ${this.id}`);
    this.removed = true;
  }

  async rename(name: string): Promise<void> {
    this.events.push(`rename ${this.id} ${name}`);
    this.name = name;
  }

  async unlock(): Promise<void> {
    this.events.push(`unlock ${this.id}`);
  }

  /** How often the provider asked for the next session program to be forked ahead (a call ended). */
  aheads = 0;

  forkNextAhead(): void {
    this.aheads++;
  }

  detach(): void {
    this.events.push(`detach ${this.id}`);
  }
}

/** A creation the test holds open: it settles when the test says so. */
export interface HeldCreation {
  sessionDigest: string;
  make(): void;
  fail(error: Error): void;
}

export class FakeSandboxes implements SandboxFactory {
  /** Every sandbox made, in order. */
  readonly made: FakeSandbox[] = [];
  /** What was done, in order: "create sb1 for <digest>", "rename sb1 <name>", "remove sb1", ... */
  readonly events: string[] = [];
  /** While true, each creation waits in `held` until the test makes or fails it. */
  hold = false;
  readonly held: HeldCreation[] = [];
  /** Creations that fail with these errors, next first. */
  readonly failures: Error[] = [];
  /** What program runs do in the sandboxes made from now on (default: exit 0). */
  behaviour: FakeSandbox['behaviour'] | undefined;

  constructor(private readonly clock: Clock) {}

  async create(spec: SandboxSpec, runtime: RuntimeChoice, _owner: Owner, sessionDigest: string, labels: Record<string, string> = {}): Promise<DockerSandbox> {
    if (this.hold) {
      await new Promise<void>((make, fail) => this.held.push({ sessionDigest, make, fail }));
    }
    const failure = this.failures.shift();
    if (failure) {
      this.events.push(`create failed for ${sessionDigest}`);
      throw failure;
    }
    const n = this.made.length + 1;
    const fake = new FakeSandbox(`sb${n}`, `codeact-${sessionDigest.slice(0, 12)}-${String(n).padStart(6, '0')}`, spec, runtime, labels, this.clock.now(), this.events);
    if (this.behaviour) fake.behaviour = this.behaviour;
    this.made.push(fake);
    this.events.push(`create sb${n} for ${sessionDigest}`);
    return asDockerSandbox(fake);
  }

  /** The fake behind a sandbox the provider hands out (by id). */
  byId(id: string): FakeSandbox {
    const fake = this.made.find((s) => s.id === id);
    if (!fake) throw new Error(`no fake sandbox ${id}`);
    return fake;
  }
}

/**
 * The fake as the provider's types take it. Only `Used` is faked: touching anything else of a
 * DockerSandbox fails the test by name, rather than reading undefined.
 */
function asDockerSandbox(fake: FakeSandbox): DockerSandbox {
  return new Proxy(fake, {
    get: (target, key, receiver) => {
      if (typeof key === 'symbol' || key === 'then' || key in target) return Reflect.get(target, key, receiver);
      throw new Error(`the provider used the sandbox's ${key}, which test/unit/fakes/sandboxes.ts does not fake`);
    },
  }) as unknown as DockerSandbox;
}
