import * as assert from 'node:assert/strict';
import type { SandboxSpec } from '../../src/docker/container/spec';
import type { RuntimeChoice } from '../../src/docker/engine/runtime';
import type { Owner } from '../../src/docker/container/labels';
import { SPARE_SESSION, SparePool } from '../../src/docker/pool/sparePool';
import { FakeClock, settle } from './fakes/clock';
import { FakeSandboxes } from './fakes/sandboxes';
import { recordingLogger } from './vscode/fakes';

const SPEC: SandboxSpec = { image: 'codeact-sandbox/python:unit', limits: { memoryMb: 256, cpus: 1, pidsLimit: 128, workAreaMb: 64 } };
const RUNTIME: RuntimeChoice = { runtime: undefined, name: 'runc', reason: "the engine's default", engine: 'docker' };
const OWNER: Owner = { kind: 'vscode', host: 'unit-host', pid: 4242, version: '0.0.0-unit' };

/**
 * A pool of `size` over fake sandboxes. Its source has room for `limit` sandboxes, the spares
 * counted among them (as the provider's maximum counts them), and counts its `changed` calls.
 */
function setup(size: number) {
  const sandboxes = new FakeSandboxes(new FakeClock());
  const log = recordingLogger();
  const source = { limit: Infinity, changes: 0 };
  const pool: SparePool = new SparePool(
    size,
    {
      make: (spec) => sandboxes.create(spec, RUNTIME, OWNER, SPARE_SESSION),
      room: () => source.limit - pool.sandboxes.length,
      changed: () => source.changes++,
    },
    log,
  );
  const ids = () => pool.sandboxes.map((s) => s.id);
  return { sandboxes, log, source, pool, ids };
}

describe('spare pool over fake sandboxes (unit)', () => {
  it('makes its spares one at a time, each counted in flight while it is made', async () => {
    const { sandboxes, source, pool, ids } = setup(2);
    sandboxes.hold = true;
    const filled = pool.fill(SPEC);
    await settle();
    assert.deepEqual([sandboxes.held.length, pool.inFlight], [1, 1]);
    // A second fill while one is under way is the same fill.
    assert.equal(pool.fill(SPEC), filled);
    sandboxes.held[0]!.make();
    await settle();
    assert.deepEqual([sandboxes.held.length, ids()], [2, ['sb1']]);
    sandboxes.held[1]!.make();
    await filled;
    assert.deepEqual([ids(), pool.inFlight], [['sb1', 'sb2'], 0]);
    // One change per spare added, and one when the fill ended.
    assert.equal(source.changes, 3);
  });

  it('stops at the room its source leaves', async () => {
    const { source, pool, ids } = setup(3);
    source.limit = 0;
    await pool.fill(SPEC);
    assert.deepEqual(ids(), []);
    source.limit = 2;
    await pool.fill(SPEC);
    assert.deepEqual(ids(), ['sb1', 'sb2']);
  });

  it('take prefers a spare whose runner is ready, else the oldest; none left gives undefined', async () => {
    const { sandboxes, pool, ids } = setup(3);
    await pool.fill(SPEC);
    assert.deepEqual(ids(), ['sb1', 'sb2', 'sb3']);
    sandboxes.byId('sb2').runner = { state: 'ready' };
    assert.deepEqual([pool.take(SPEC)?.id, pool.take(SPEC)?.id, pool.take(SPEC)?.id, pool.take(SPEC)], ['sb2', 'sb1', 'sb3', undefined]);
  });

  it('a drain while a spare is being made: the fill stops and removes it when it arrives', async () => {
    const { sandboxes, pool, ids } = setup(2);
    sandboxes.hold = true;
    const filled = pool.fill(SPEC);
    await settle();
    await pool.drain();
    sandboxes.held[0]!.make();
    await filled;
    assert.deepEqual(ids(), []);
    assert.deepEqual(sandboxes.events, ['create sb1 for spare', 'remove sb1']);
    assert.equal(sandboxes.held.length, 1);
  });

  it('changed settings drain the spares; the next fill makes them for the new ones', async () => {
    const { sandboxes, log, pool, ids } = setup(1);
    await pool.fill(SPEC);
    const other = { ...SPEC, image: 'codeact-sandbox/python:other' };
    pool.noteSpec(other);
    await settle();
    assert.deepEqual(ids(), []);
    await pool.fill(other);
    assert.deepEqual(ids(), ['sb2']);
    assert.equal(sandboxes.byId('sb2').image, 'codeact-sandbox/python:other');
    assert.deepEqual(sandboxes.events, ['create sb1 for spare', 'remove sb1', 'create sb2 for spare']);
    assert.deepEqual(log.lines, [
      'info: spare sandbox codeact-spare-000001 ready for the next new session',
      'info: the sandbox settings changed; replacing the spare sandboxes',
      'info: spare sandbox codeact-spare-000002 ready for the next new session',
    ]);
  });

  it('renew removes the spares it is told are stale, then makes spares of the spec it is given', async () => {
    const { sandboxes, log, pool, ids } = setup(2);
    await pool.fill(SPEC);
    const ahead = { ...SPEC, preloadAhead: ['pandas'] };
    await pool.renew(ahead, (s) => s.id === 'sb1');
    assert.deepEqual(ids(), ['sb2', 'sb3']);
    assert.deepEqual([sandboxes.byId('sb1').removed, sandboxes.byId('sb3').spec.preloadAhead], [true, ['pandas']]);
    // Removed before the new one is made: the old and the new never count together against the maximum.
    assert.deepEqual(sandboxes.events, ['create sb1 for spare', 'create sb2 for spare', 'remove sb1', 'create sb3 for spare']);
    assert.deepEqual(log.lines.filter((l) => l.includes('replacing')), ["info: replacing 1 spare sandbox(es) to preload what this window's programs imported"]);
  });

  it('renew waits for a spare being made: kept when it is up to date, replaced when it is stale', async () => {
    const { sandboxes, pool, ids } = setup(2);
    await pool.fill(SPEC);
    pool.evictOne();
    sandboxes.hold = true;
    /** Frees a place, starts a fill, renews with `staleId` stale while it is under way, then lets both spares arrive. */
    const renewWhileMaking = async (staleId: string) => {
      pool.evictOne();
      void pool.fill(SPEC);
      await settle();
      const renewed = pool.renew(SPEC, (s) => s.id === staleId);
      sandboxes.held.at(-1)!.make();
      await settle();
      sandboxes.held.at(-1)!.make();
      await renewed;
    };
    // sb3, under way, is up to date: kept; sb4 fills the other place.
    await renewWhileMaking('sb1');
    assert.deepEqual(ids(), ['sb3', 'sb4']);
    // sb5, under way, is stale: removed once it arrives, and sb6 made instead.
    await renewWhileMaking('sb5');
    assert.deepEqual(ids(), ['sb4', 'sb6']);
    assert.deepEqual(sandboxes.events.slice(-3), ['create sb5 for spare', 'remove sb5', 'create sb6 for spare']);
  });

  it('close removes the spares at once, the one being made when it arrives, and makes no more', async () => {
    const { sandboxes, source, pool, ids } = setup(2);
    source.limit = 1;
    await pool.fill(SPEC);
    source.limit = 2;
    sandboxes.hold = true;
    const filling = pool.fill(SPEC);
    await settle();
    const closed = pool.close();
    await settle();
    assert.deepEqual(sandboxes.events, ['create sb1 for spare', 'remove sb1']);
    sandboxes.held[0]!.make();
    await closed;
    await filling;
    assert.deepEqual(ids(), []);
    assert.deepEqual(sandboxes.events, ['create sb1 for spare', 'remove sb1', 'create sb2 for spare', 'remove sb2']);
    await pool.fill(SPEC);
    assert.equal(sandboxes.held.length, 1);
  });

  it('evictOne removes the oldest spare and tells the source when it is gone; false when there is none', async () => {
    const { sandboxes, log, source, pool, ids } = setup(2);
    await pool.fill(SPEC);
    const before = source.changes;
    assert.equal(pool.evictOne(), true);
    assert.deepEqual(ids(), ['sb2']);
    await settle();
    assert.equal(sandboxes.byId('sb1').removed, true);
    assert.equal(source.changes, before + 1);
    assert.equal(log.lines.at(-1), 'info: removing spare sandbox codeact-spare-000001 to make room for a session');
    assert.equal(pool.evictOne(), true);
    assert.equal(pool.evictOne(), false);
  });

  it('a make that fails is logged, ends the fill, and the next fill tries again', async () => {
    const { sandboxes, log, pool, ids } = setup(1);
    sandboxes.failures.push(new Error('the engine said no'));
    await pool.fill(SPEC);
    assert.deepEqual(ids(), []);
    assert.deepEqual(log.lines, ['info: creating a spare sandbox failed (a new session creates its own): Error: the engine said no']);
    await pool.fill(SPEC);
    assert.deepEqual(ids(), ['sb1']);
  });
});
