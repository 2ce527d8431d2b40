import * as assert from 'node:assert/strict';
import { LABEL } from '../../../src/docker/container/labels';
import { PROBE_MAX_AGE_MS, probeLabels, probeLeftOver } from '../../../src/docker/network/probe';

describe('probe networks left behind (unit)', function () {
  const created = '2026-12-07T02:00:00.123456789Z';
  const at = Date.parse(created);
  const labels = probeLabels({ [LABEL.managed]: '1' }, { host: 'this-host', pid: 4242 });
  const alive = (pid: number) => pid === 4242;
  const dead = () => false;

  it('labels a probe as one, with the process that makes it', function () {
    assert.deepEqual(labels, { [LABEL.managed]: '1', 'dev.codeact-sandbox.egress-role': 'probe', [LABEL.ownerHost]: 'this-host', [LABEL.ownerPid]: '4242' });
  });

  it("leaves a young probe of a live process alone, and takes one whose process on this machine is gone", function () {
    assert.equal(probeLeftOver(labels, created, at + 1000, 'this-host', alive), false);
    assert.equal(probeLeftOver(labels, created, at + 1000, 'this-host', dead), true);
    // Another machine's process cannot be asked: its probe goes by its age alone.
    assert.equal(probeLeftOver(labels, created, at + 1000, 'other-host', dead), false);
  });

  it('takes a probe older than its maker could still be using, live maker or not: a create the engine carried out after the deadline gave up', function () {
    assert.equal(probeLeftOver(labels, created, at + PROBE_MAX_AGE_MS, 'this-host', alive), false);
    assert.equal(probeLeftOver(labels, created, at + PROBE_MAX_AGE_MS + 1, 'this-host', alive), true);
    assert.equal(probeLeftOver(labels, created, at + PROBE_MAX_AGE_MS + 1, 'other-host', alive), true);
    // An earlier version's probe names no maker: its age decides.
    assert.equal(probeLeftOver({ [LABEL.managed]: '1' }, created, at + 1000, 'this-host', dead), false);
    assert.equal(probeLeftOver({ [LABEL.managed]: '1' }, created, at + PROBE_MAX_AGE_MS + 1, 'this-host', dead), true);
    // A creation time that cannot be read: only a gone maker makes it a leftover.
    assert.equal(probeLeftOver(labels, undefined, at + PROBE_MAX_AGE_MS + 1, 'this-host', alive), false);
  });
});
