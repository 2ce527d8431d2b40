import * as assert from 'node:assert/strict';
import type { ProgramRun } from '../../src/core/sandbox';
import type { RuntimeChoice } from '../../src/docker/engine/runtime';
import { SandboxGoneError } from '../../src/docker/engine/errors';
import { Lease, type Entry, type LeaseHolder } from '../../src/docker/pool/lease';
import { FakeClock } from './fakes/clock';
import { FakeSandboxes, WORK_DIR } from './fakes/sandboxes';

const RUNTIME: RuntimeChoice = { runtime: undefined, name: 'runc', reason: "the engine's default", engine: 'docker' };
const SPEC = { image: 'codeact-sandbox/python:unit', limits: { memoryMb: 256, cpus: 1, pidsLimit: 128, workAreaMb: 64 }, packagesSetting: 'codeactSandbox.pythonPackages' };
const OWNER = { kind: 'vscode' as const, host: 'unit-host', pid: 4242, version: '0.0.0-unit' };
const REPLACED = 'The sandbox had stopped and was replaced; files written by earlier calls are gone.';

function program(): ProgramRun {
  return { code: 'print(1)', onStdout: () => {}, onStderr: () => {}, onStart: () => {}, signal: new AbortController().signal };
}

/** A provider that records what its leases ask of it and replaces a gone sandbox with a new fake. */
function setup() {
  const sandboxes = new FakeSandboxes(new FakeClock());
  const asked: string[] = [];
  const entry = async (): Promise<Entry> => ({ key: 'session', sandbox: await sandboxes.create(SPEC, RUNTIME, OWNER, 'digest'), leases: 1, retired: false });
  const holder: LeaseHolder = {
    releaseLease: async (e) => void asked.push(`release ${e.sandbox.id}`),
    replaceGone: async (key, gone) => {
      asked.push(`replace ${gone.sandbox.id} of ${key}`);
      return entry();
    },
  };
  return { sandboxes, asked, entry, holder };
}

describe('lease: what a call holds (unit)', () => {
  it("says what its sandbox is: id, image, runtime, the packages setting", async () => {
    const { entry, holder } = setup();
    const lease = new Lease(holder, 'a', await entry());
    assert.deepEqual([lease.id, lease.image, lease.runtime, lease.packagesSetting], ['sb1', SPEC.image, 'runc', 'codeactSandbox.pythonPackages']);
  });

  it("gives its notes with the first result only, before the sandbox's own", async () => {
    const { sandboxes, entry, holder } = setup();
    const lease = new Lease(holder, 'a', await entry(), ['made room']);
    sandboxes.byId('sb1').behaviour = async () => ({ exitCode: 1, workDir: WORK_DIR, notes: ['its own'] });
    assert.deepEqual(await lease.run(program()), { exitCode: 1, workDir: WORK_DIR, notes: ['made room', 'its own'] });
    assert.deepEqual(await lease.run(program()), { exitCode: 1, workDir: WORK_DIR, notes: ['its own'] });
  });

  it('a sandbox gone under the call is replaced once, and the lease holds the new one from then on', async () => {
    const { sandboxes, asked, entry, holder } = setup();
    const lease = new Lease(holder, 'a', await entry());
    sandboxes.byId('sb1').behaviour = async () => {
      throw new SandboxGoneError();
    };
    assert.deepEqual(await lease.run(program()), { exitCode: 0, workDir: WORK_DIR, notes: [REPLACED] });
    assert.equal(lease.id, 'sb2');
    // Its outputs are collected from the sandbox that ran it.
    await lease.collect(WORK_DIR, ['chart.png'], { maxFiles: 1, maxFileBytes: 1, maxTotalBytes: 1 }, async () => ({ name: 'chart.png', size: 0 }));
    assert.deepEqual(sandboxes.events, ['create sb1 for digest', 'run sb1', 'create sb2 for digest', 'run sb2', 'collect sb2']);
    await lease.release();
    assert.deepEqual(asked, ['replace sb1 of a', 'release sb2']);
  });

  it("other failures are the call's, and release is told once however often it is called", async () => {
    const { sandboxes, asked, entry, holder } = setup();
    const lease = new Lease(holder, 'a', await entry());
    sandboxes.byId('sb1').behaviour = async () => {
      throw new Error('exec failed');
    };
    await assert.rejects(lease.run(program()), new Error('exec failed'));
    await lease.release();
    await lease.release();
    assert.deepEqual(asked, ['release sb1']);
  });
});
