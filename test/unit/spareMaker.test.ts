import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MAKER_DEADLINE_MS, liveMakers, makerSpec, makersDir, makersEnded } from '../../src/cli/spareMaker';

const SPEC = { image: 'python:3.12-slim', limits: { memoryMb: 256, cpus: 1, pidsLimit: 128, workAreaMb: 64 }, preloadModules: ['json'], runtime: 'auto' };

describe('the spare maker', function () {
  let dir: string;
  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-makers-'));
  });
  afterEach(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const note = (pid: number, ageMs = 0) => {
    const file = path.join(dir, String(pid));
    fs.writeFileSync(file, '');
    const when = new Date(Date.now() - ageMs);
    fs.utimesSync(file, when, when);
  };

  it('is noted in the cache folder the platform names', function () {
    assert.equal(makersDir({ XDG_CACHE_HOME: '/tmp/c' }), '/tmp/c/codeact-sandbox/spare-makers');
  });

  it('reads back the spec its run started it with, and nothing else', function () {
    assert.deepEqual(makerSpec({ CODEACT_SPARE_SPEC: JSON.stringify(SPEC) }), SPEC);
    assert.equal(makerSpec({}), undefined);
    assert.equal(makerSpec({ CODEACT_SPARE_SPEC: '{"image": ""}' }), undefined);
    assert.equal(makerSpec({ CODEACT_SPARE_SPEC: 'not json' }), undefined);
    assert.equal(makerSpec({ CODEACT_SPARE_SPEC: JSON.stringify({ ...SPEC, limits: { memoryMb: '256' } }) }), undefined);
  });

  it('counts live makers only: a dead one, a stale one and a stray file are forgotten', function () {
    note(101);
    note(102);
    note(103, MAKER_DEADLINE_MS + 1000);
    fs.writeFileSync(path.join(dir, 'stray'), '');
    assert.deepEqual(liveMakers(dir, (pid) => pid !== 102), [101]);
    assert.deepEqual(fs.readdirSync(dir), ['101']);
  });

  it('an absent folder has no makers', function () {
    assert.deepEqual(liveMakers(path.join(dir, 'none'), () => true), []);
  });

  it('waits until the last maker removes its note', async function () {
    note(201);
    note(202);
    const alive = new Set([201, 202]);
    let ended = false;
    const waiting = makersEnded(dir, (pid) => alive.has(pid)).then(() => (ended = true));
    // Each maker removes its note as it ends (what noteMakerEnd does in the maker).
    fs.rmSync(path.join(dir, '201'));
    alive.delete(201);
    await new Promise((r) => setImmediate(r));
    assert.equal(ended, false);
    fs.rmSync(path.join(dir, '202'));
    alive.delete(202);
    await waiting;
    assert.equal(ended, true);
  });
});
