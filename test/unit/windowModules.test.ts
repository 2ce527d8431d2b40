import * as assert from 'node:assert/strict';
import type { SandboxSpec } from '../../src/docker/container/spec';
import { commandWithoutAhead } from '../../src/docker/container/runnerProgram';
import { WindowModules } from '../../src/docker/pool/windowModules';

const SPEC: SandboxSpec = { image: 'codeact-sandbox/python:unit', limits: { memoryMb: 256, cpus: 1, pidsLimit: 128, workAreaMb: 64 }, preloadModules: ['numpy', 'pandas', 'scipy'] };

describe('what a window preloads ahead of its chats (unit)', () => {
  it('sandboxes made ahead preload, in the list order, what the window imported of the list', () => {
    const w = new WindowModules();
    assert.equal(w.ahead(SPEC), SPEC);
    assert.equal(w.note(undefined, SPEC), false);
    // Only names of the list are kept: a reply naming others adds nothing.
    assert.equal(w.note(['evil', 'os'], SPEC), false);
    assert.equal(w.note(['scipy', 'evil'], SPEC), true);
    assert.equal(w.note(new Set(['scipy']), SPEC), false);
    assert.equal(w.note(['numpy'], SPEC), true);
    assert.deepEqual(w.ahead(SPEC), { ...SPEC, preloadAhead: ['numpy', 'scipy'] });
    // With everything preloaded at the start, or no runner, there is nothing to add.
    const start: SandboxSpec = { ...SPEC, preloadWhen: 'start' };
    const cold: SandboxSpec = { ...SPEC, warmRunner: false };
    assert.deepEqual([w.ahead(start) === start, w.ahead(cold) === cold], [true, true]);
  });

  it('a sandbox is behind when it lacks something the window would preload now', () => {
    const w = new WindowModules();
    assert.equal(w.behind(SPEC), false);
    w.note(['pandas'], SPEC);
    assert.deepEqual([w.behind(SPEC), w.behind({ ...SPEC, preloadAhead: ['pandas'] }), w.behind({ ...SPEC, preloadAhead: ['numpy', 'pandas'] })], [true, false, false]);
    assert.equal(w.behind({ ...SPEC, preloadWhen: 'start' }), false);
  });

  it("a container's command compares without what was preloaded ahead", () => {
    const cmd = (config: string) => ['python3', '-c', 'SOURCE', config];
    assert.deepEqual(commandWithoutAhead(cmd('preload=numpy,pandas;learn=numpy,pandas,scipy')), cmd('preload=;learn=numpy,pandas,scipy'));
    assert.deepEqual(commandWithoutAhead(cmd('preload=numpy,pandas')), cmd('preload=numpy,pandas'));
    // Preloading what the list does not name is no hint: the command stays, and matches no spec.
    assert.deepEqual(commandWithoutAhead(cmd('preload=numpy,evil;learn=numpy,pandas')), cmd('preload=numpy,evil;learn=numpy,pandas'));
    assert.deepEqual(commandWithoutAhead(['python3', '-c', 'KEEPER']), ['python3', '-c', 'KEEPER']);
    assert.deepEqual(commandWithoutAhead(undefined), []);
  });
});
