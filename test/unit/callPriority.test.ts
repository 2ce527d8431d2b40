import * as assert from 'node:assert/strict';
import { NORMAL_CPU_SHARES, hardenedHostConfig } from '../../src/docker/container/spec';
import { CallPriority, LONG_CALL_CPU_SHARES, LONG_CALL_MS, type PriorityTimers } from '../../src/docker/run/callPriority';
import { consoleLogger } from '../../src/core/logger';

/** Timers the test fires by hand, and the engine's share changes as they were asked for. */
function harness(refuse: (shares: number) => boolean = () => false) {
  const due: { fn: () => void; ms: number }[] = [];
  const timers: PriorityTimers = {
    setTimeout: (fn, ms) => {
      const t = { fn, ms };
      due.push(t);
      return t;
    },
    clearTimeout: (t) => void due.splice(due.indexOf(t as (typeof due)[number]) >>> 0, 1),
  };
  const asked: number[] = [];
  let release: (() => void) | undefined;
  const said: string[] = [];
  const log = consoleLogger(true, (text) => void said.push(text));
  const priority = new CallPriority(
    async (shares) => {
      asked.push(shares);
      if (hold) await new Promise<void>((resolve) => (release = resolve));
      if (refuse(shares)) throw new Error('no such endpoint');
    },
    log,
    () => 'codeact-x',
    timers,
  );
  let hold = false;
  return {
    priority,
    asked,
    said,
    due,
    fire: () => due.shift()!.fn(),
    holdNext: () => (hold = true),
    release: () => ((hold = false), release?.()),
  };
}

describe("a long call's CPU share (unit)", function () {
  it('leaves a call that ends before LONG_CALL_MS at the normal share, asking the engine nothing', async function () {
    const h = harness();
    h.priority.started();
    assert.deepEqual(h.due.map((t) => t.ms), [LONG_CALL_MS]);
    await h.priority.ended();
    assert.deepEqual([h.due.length, h.asked], [0, []]);
  });

  it('lowers a call still running at LONG_CALL_MS, and sets the share back as it ends', async function () {
    const h = harness();
    h.priority.started();
    h.fire();
    await h.priority.ended();
    assert.deepEqual(h.asked, [LONG_CALL_CPU_SHARES, NORMAL_CPU_SHARES]);
  });

  it("sets it back only after the lowering the engine is still making, so the next call is not left lowered", async function () {
    const h = harness();
    h.priority.started();
    h.holdNext();
    h.fire();
    const ended = h.priority.ended();
    assert.deepEqual(h.asked, [LONG_CALL_CPU_SHARES]);
    h.release();
    await ended;
    assert.deepEqual(h.asked, [LONG_CALL_CPU_SHARES, NORMAL_CPU_SHARES]);
  });

  it('asks an engine that refused a change no more, and says so once', async function () {
    const h = harness((shares) => shares === LONG_CALL_CPU_SHARES);
    h.priority.started();
    h.fire();
    await h.priority.ended();
    h.priority.started();
    assert.deepEqual([h.asked, h.due.length], [[LONG_CALL_CPU_SHARES], 0]);
    assert.deepEqual(h.said, ['[info] sandbox codeact-x: its CPU share could not be set to 128 (Error: no such endpoint); it is not changed for long calls any more\n']);
  });

  it('is set at creation only where the engine can change it later: Docker, under a runtime other than gVisor', function () {
    const limits = { memoryMb: 512, cpus: 1, pidsLimit: 64, workAreaMb: 64 };
    const shares = (runtime: string, engine: 'docker' | 'podman') => hardenedHostConfig('v', limits, [], runtime, engine).CpuShares;
    assert.deepEqual([shares('runc', 'docker'), shares('crun', 'docker'), shares('runsc', 'docker'), shares('crun', 'podman')], [1024, 1024, undefined, undefined]);
  });
});
