import * as assert from 'node:assert/strict';
import { ToolError } from '../../src/core/errors';
import type { ProgramExit, ProgramRun, Sandbox } from '../../src/core/sandbox';
import { sessionDigest } from '../../src/core/session';
import type { SandboxSpec } from '../../src/docker/container/spec';
import { DockerSandboxProvider, type ProviderOptions } from '../../src/docker/pool/dockerSandboxProvider';
import { SandboxGoneError } from '../../src/docker/engine/errors';
import { LABEL, type Owner } from '../../src/docker/container/labels';
import { poolDigest } from '../../src/docker/pool/sparePool';
import { FakeClock, settle } from './fakes/clock';
import { FakeEngine } from './fakes/engine';
import { FakeSandboxes, WORK_DIR } from './fakes/sandboxes';
import { recordingLogger } from './vscode/fakes';

const IMAGE = 'codeact-sandbox/python:unit';
const LIMITS = { memoryMb: 256, cpus: 1, pidsLimit: 128, workAreaMb: 64 };
const OWNER: Owner = { kind: 'vscode', host: 'unit-host', pid: 4242, version: '0.0.0-unit' };
const START = 1_000_000;
const PENDING = Symbol('pending');

const EVICTED = (max: number) =>
  `This chat's sandbox was removed to make room for other chats (at most ${max} sandboxes are kept at once), so files written by earlier calls are gone.`;
const REPLACED = 'The sandbox had stopped and was replaced; files written by earlier calls are gone.';

/** The promise's value if it has settled by now, else PENDING. */
function peek<T>(p: Promise<T>): Promise<T | typeof PENDING> {
  return Promise.race([p, settle().then((): typeof PENDING => PENDING)]);
}

/** The name a fake sandbox gets: the session's digest, then its number. */
const nameOf = (sessionKey: string, n: number) => `codeact-${sessionDigest(sessionKey).slice(0, 12)}-${String(n).padStart(6, '0')}`;
const created = (n: number, sessionKey: string) => `create sb${n} for ${sessionDigest(sessionKey)}`;
const createdSpare = (n: number) => `create sb${n} for spare`;

function program(signal = new AbortController().signal): ProgramRun {
  return { code: 'print(1)', onStdout: () => {}, onStderr: () => {}, onStart: () => {}, signal };
}

async function release(lease: Sandbox): Promise<void> {
  assert.ok(lease.release);
  await lease.release();
}

/** A provider over fake sandboxes, a fake engine that has the image, and a fake clock. */
function setup(options: Partial<ProviderOptions> = {}) {
  const clock = new FakeClock(START);
  const engine = new FakeEngine([IMAGE]);
  const sandboxes = new FakeSandboxes(clock);
  const log = recordingLogger();
  /** What the settings say now: a test changes them between calls. */
  const settings: { spec: SandboxSpec } = { spec: { image: IMAGE, limits: LIMITS } };
  const provider = new DockerSandboxProvider({
    docker: engine.docker,
    owner: OWNER,
    spec: () => settings.spec,
    imageSettingHint: 'the setting codeactSandbox.image',
    log,
    idleMs: 0,
    sandboxes,
    clock,
    ...options,
  });
  const acquire = (sessionKey: string, signal = new AbortController().signal) => provider.acquire(sessionKey, signal);
  /** The log's lines that match `pattern`. */
  const said = (pattern: RegExp) => log.lines.filter((l) => pattern.test(l));
  return { clock, engine, sandboxes, log, provider, settings, acquire, said };
}

describe('sandbox provider over fake sandboxes and a fake clock (unit)', () => {
  it("asks the session's sandbox to fork its next program ahead each time a call ends", async () => {
    const { sandboxes, acquire } = setup();
    const first = await acquire('a');
    assert.equal(sandboxes.byId('sb1').aheads, 0);
    await release(first);
    assert.equal(sandboxes.byId('sb1').aheads, 1);
    await release(await acquire('a'));
    assert.equal(sandboxes.byId('sb1').aheads, 2);
  });

  it('a session keeps its sandbox from call to call; another session gets its own', async () => {
    const { sandboxes, provider, acquire } = setup();
    const a1 = await acquire('a');
    await release(a1);
    const a2 = await acquire('a');
    const b = await acquire('b');
    assert.deepEqual([a1.id, a2.id, b.id], ['sb1', 'sb1', 'sb2']);
    assert.deepEqual(sandboxes.events, [created(1, 'a'), created(2, 'b')]);
    assert.deepEqual([...provider.active].map(([key, s]) => [key, s.id]), [['a', 'sb1'], ['b', 'sb2']]);
  });

  describe('at most maxSandboxes', () => {
    it('two calls racing for the last room: one creates, the other waits until a sandbox is free', async () => {
      const { sandboxes, acquire, said } = setup({ maxSandboxes: 2 });
      const a = await acquire('a');
      const b = acquire('b');
      const c = acquire('c');
      assert.equal((await b).id, 'sb2');
      assert.equal(await peek(c), PENDING);
      // The sandbox b's call holds is not the idle one c's wait may remove.
      assert.equal(sandboxes.byId('sb2').removed, false);
      assert.deepEqual(sandboxes.events, [created(1, 'a'), created(2, 'b')]);
      assert.deepEqual(said(/waits/), ['info: all 2 sandboxes are in use; c waits for one']);

      // b's call ends: its idle sandbox makes room for c's.
      await release(await b);
      assert.equal(((await peek(c)) as Sandbox).id, 'sb3');
      assert.deepEqual(sandboxes.events, [created(1, 'a'), created(2, 'b'), 'remove sb2', created(3, 'c')]);
      assert.deepEqual(said(/to make room/), [`info: removing the idle sandbox ${nameOf('b', 2)} to make room (at most 2 sandboxes)`]);
      assert.equal(a.id, 'sb1');
    });

    it('past the maximum the least recently used idle sandbox goes, and its chat is told once, at its next call', async () => {
      const { clock, sandboxes, provider, acquire } = setup({ maxSandboxes: 2 });
      await release(await acquire('a'));
      await clock.advance(1_000);
      await release(await acquire('b'));
      await release(await acquire('c'));
      assert.deepEqual([...provider.active.keys()], ['b', 'c']);

      const again = await acquire('a');
      assert.deepEqual(sandboxes.events, [created(1, 'a'), created(2, 'b'), 'remove sb1', created(3, 'c'), 'remove sb2', created(4, 'a')]);
      const first = await again.run(program());
      assert.deepEqual(first, { exitCode: 0, workDir: WORK_DIR, notes: [EVICTED(2)] });
      assert.deepEqual(await again.run(program()), { exitCode: 0, workDir: WORK_DIR });
      await release(again);
      const later = await acquire('a');
      assert.deepEqual(await later.run(program()), { exitCode: 0, workDir: WORK_DIR });
    });

    it('a call waiting for room can be cancelled, and its wait leaves nothing behind', async () => {
      const { sandboxes, acquire } = setup({ maxSandboxes: 1 });
      const a = await acquire('a');
      const abort = new AbortController();
      const b = acquire('b', abort.signal);
      assert.equal(await peek(b), PENDING);
      abort.abort();
      await assert.rejects(b, new ToolError('cancelled', 'The run was cancelled while it waited for a free sandbox.'));
      await release(a);
      assert.equal((await acquire('c')).id, 'sb2');
      assert.deepEqual(sandboxes.events, [created(1, 'a'), 'remove sb1', created(2, 'c')]);
    });

    it('a creation that fails gives its room back, and the call waiting for that room goes on', async () => {
      const { sandboxes, provider, acquire } = setup({ maxSandboxes: 1 });
      sandboxes.hold = true;
      const a = acquire('a');
      await settle();
      const b = acquire('b');
      await settle();
      assert.deepEqual(sandboxes.held.map((h) => h.sessionDigest), [sessionDigest('a')]);
      sandboxes.held[0]!.fail(new Error('the engine said no'));
      await assert.rejects(a, new Error('the engine said no'));
      await settle();
      // b was woken and claimed the room a left.
      assert.deepEqual(sandboxes.held.map((h) => h.sessionDigest), [sessionDigest('a'), sessionDigest('b')]);
      sandboxes.held[1]!.make();
      assert.equal((await b).id, 'sb1');
      assert.deepEqual(sandboxes.events, [created(1, 'b')]);
      assert.deepEqual([...provider.active.keys()], ['b']);
    });
  });

  describe('spares', () => {
    it('a spare is taken by a new session; its new name and its replacement come after the call, not during it', async () => {
      const { clock, sandboxes, provider, acquire, said } = setup({ spareSandboxes: 1 });
      await provider.fillSpares();
      assert.deepEqual(provider.spareIds, ['sb1']);
      assert.deepEqual(sandboxes.byId('sb1').labels, { [LABEL.session]: 'spare', [LABEL.pool]: poolDigest({ image: IMAGE, limits: LIMITS }, 'runc', OWNER.version) });
      assert.equal(sandboxes.byId('sb1').name, 'codeact-spare-000001');

      const a = await acquire('a');
      assert.equal(a.id, 'sb1');
      assert.deepEqual(said(/took spare/), ['info: session a took spare sandbox codeact-spare-000001']);
      const renamed = `codeact-${sessionDigest('a').slice(0, 12)}-000001`;
      assert.deepEqual(sandboxes.events, [createdSpare(1)]);
      // While the call runs, nothing is asked of the engine: it would cost the engine and the CPU the call runs on.
      await a.run(program());
      await clock.advance(60_000);
      assert.deepEqual(provider.spareIds, []);
      assert.deepEqual(sandboxes.events, [createdSpare(1), 'run sb1']);

      await release(a);
      await settle();
      assert.deepEqual(provider.spareIds, ['sb2']);
      assert.deepEqual(sandboxes.events, [createdSpare(1), 'run sb1', `rename sb1 ${renamed}`, createdSpare(2)]);
      // Later calls of the session keep its sandbox; the new spare stays a spare.
      const again = await acquire('a');
      assert.equal(again.id, 'sb1');
      await release(again);
      await settle();
      assert.deepEqual(provider.spareIds, ['sb2']);
      assert.deepEqual(sandboxes.events, [createdSpare(1), 'run sb1', `rename sb1 ${renamed}`, createdSpare(2)]);
    });

    it('a spare counts against the maximum: none is made while the maximum is reached', async () => {
      const { sandboxes, provider, acquire } = setup({ maxSandboxes: 2, spareSandboxes: 1 });
      await release(await acquire('a'));
      await settle();
      assert.deepEqual(provider.spareIds, ['sb2']);
      const b = await acquire('b');
      assert.equal(b.id, 'sb2');
      await release(b);
      await settle();
      assert.deepEqual(provider.spareIds, []);
      assert.deepEqual(sandboxes.events, [created(1, 'a'), createdSpare(2), `rename sb2 codeact-${sessionDigest('b').slice(0, 12)}-000002`]);
    });

    it('changed settings drain the spares; the refill after the call is made for the new ones', async () => {
      const { sandboxes, provider, settings, acquire } = setup({ spareSandboxes: 1 });
      await provider.fillSpares();
      settings.spec = { image: IMAGE, limits: { ...LIMITS, memoryMb: 288 } };
      const a = await acquire('a');
      assert.equal(a.id, 'sb2');
      await release(a);
      await settle();
      assert.deepEqual(provider.spareIds, ['sb3']);
      assert.deepEqual(sandboxes.events, [createdSpare(1), 'remove sb1', created(2, 'a'), createdSpare(3)]);
      assert.equal(sandboxes.byId('sb3').spec.limits.memoryMb, 288);
    });

    it('fillSpares makes none while the image is not on the engine: it never pulls', async () => {
      const { engine, sandboxes, provider } = setup({ spareSandboxes: 1 });
      engine.images.clear();
      await provider.fillSpares();
      assert.deepEqual(provider.spareIds, []);
      assert.deepEqual(sandboxes.events, []);
      assert.deepEqual(engine.calls, [`inspect image ${IMAGE}`]);
    });
  });

  describe('retiring and replacing', () => {
    it('a sandbox whose settings changed is removed only when the last call holding it is released', async () => {
      const { sandboxes, provider, settings, acquire, said } = setup();
      const first = await acquire('a');
      const second = await acquire('a');
      settings.spec = { image: IMAGE, limits: { ...LIMITS, cpus: 2 } };
      const third = await acquire('a');
      assert.deepEqual([first.id, second.id, third.id], ['sb1', 'sb1', 'sb2']);
      assert.deepEqual(said(/no longer matches/), [`info: session sandbox ${nameOf('a', 1)} no longer matches the settings; replacing it`]);
      assert.equal(provider.retiringCount, 1);

      await release(first);
      assert.equal(sandboxes.byId('sb1').removed, false);
      assert.equal(provider.retiringCount, 1);
      await release(second);
      assert.equal(sandboxes.byId('sb1').removed, true);
      assert.equal(provider.retiringCount, 0);
      assert.deepEqual(sandboxes.events, [created(1, 'a'), created(2, 'a'), 'remove sb1']);
      assert.equal(provider.active.get('a')!.id, 'sb2');
    });

    it('a sandbox gone under a call is replaced: the call runs again in the new one and is told so', async () => {
      const { sandboxes, provider, acquire, log } = setup();
      const lease = await acquire('a');
      sandboxes.byId('sb1').behaviour = async () => {
        throw new SandboxGoneError();
      };
      assert.deepEqual(await lease.run(program()), { exitCode: 0, workDir: WORK_DIR, notes: [REPLACED] });
      assert.equal(lease.id, 'sb2');
      assert.deepEqual(sandboxes.events, [created(1, 'a'), 'run sb1', 'remove sb1', created(2, 'a'), 'run sb2']);
      assert.ok(log.lines.includes(`warn: sandbox ${nameOf('a', 1)} is gone; creating a new one`));
      await release(lease);
      assert.equal(provider.active.get('a')!.id, 'sb2');
      assert.equal((await acquire('a')).id, 'sb2');
    });

    it("only once: the new sandbox gone too is the call's failure, not another replacement", async () => {
      const { sandboxes, acquire } = setup();
      const lease = await acquire('a');
      const gone = async (): Promise<ProgramExit> => {
        throw new SandboxGoneError();
      };
      sandboxes.byId('sb1').behaviour = gone;
      sandboxes.behaviour = gone;
      await assert.rejects(lease.run(program()), new SandboxGoneError());
      assert.deepEqual(sandboxes.events, [created(1, 'a'), 'run sb1', 'remove sb1', created(2, 'a'), 'run sb2']);
    });
  });

  it('removes a sandbox idle for idleMs at the next sweep, and never one a call holds', async () => {
    const { clock, sandboxes, provider, acquire, said } = setup({ idleMs: 120_000 });
    await release(await acquire('a'));
    const b = await acquire('b');
    // Swept every minute (at most): at 60 s a is not idle long enough yet.
    await clock.advance(60_000);
    assert.deepEqual(sandboxes.events, [created(1, 'a'), created(2, 'b')]);
    await clock.advance(60_000);
    assert.deepEqual(sandboxes.events, [created(1, 'a'), created(2, 'b'), 'remove sb1']);
    assert.deepEqual(said(/idle for/), [`info: sandbox ${nameOf('a', 1)} idle for 120 s; removing it`]);

    await clock.advance(600_000);
    assert.deepEqual([...provider.active.keys()], ['b']);
    await release(b);
    await clock.advance(119_999);
    assert.deepEqual([...provider.active.keys()], ['b']);
    await clock.advance(1);
    assert.deepEqual([...provider.active.keys()], []);
    assert.equal((await acquire('a')).id, 'sb3');
  });

  describe('disposal', () => {
    it('while a sandbox is being made: it is removed when it arrives, the call fails, and nothing is left', async () => {
      const { sandboxes, provider, acquire, clock } = setup({ idleMs: 60_000 });
      sandboxes.hold = true;
      const a = acquire('a');
      await settle();
      const disposed = provider.dispose();
      assert.equal(await peek(disposed), PENDING);
      sandboxes.held[0]!.make();
      await assert.rejects(a, new ToolError('sandbox_failed', 'The sandbox service is shutting down.'));
      await disposed;
      assert.deepEqual(sandboxes.events, [created(1, 'a'), 'remove sb1']);
      assert.deepEqual([...provider.active.keys()], []);
      await assert.rejects(acquire('b'), new ToolError('sandbox_failed', 'The sandbox service is shutting down.'));
      // The idle sweep went with it.
      assert.equal(clock.timers, 0);
    });

    it('removes every sandbox it made: retiring, held and spare', async () => {
      const { sandboxes, provider, settings, acquire } = setup({ spareSandboxes: 1 });
      const first = await acquire('a');
      settings.spec = { image: IMAGE, limits: { ...LIMITS, pidsLimit: 64 } };
      const second = await acquire('a');
      await provider.fillSpares();
      assert.deepEqual([first.id, second.id, provider.retiringCount, provider.spareIds], ['sb1', 'sb2', 1, ['sb3']]);
      await provider.dispose();
      assert.deepEqual(sandboxes.made.map((s) => [s.id, s.removed]), [
        ['sb1', true],
        ['sb2', true],
        ['sb3', true],
      ]);
      assert.deepEqual(sandboxes.events.slice(3).sort(), ['remove sb1', 'remove sb2', 'remove sb3']);
    });
  });
});
