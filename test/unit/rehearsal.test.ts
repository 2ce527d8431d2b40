import assert from 'node:assert/strict';
import { rehearseCallPath } from '../../src/core/rehearsal';

describe('the host path rehearsed before a first call (unit)', () => {
  it('takes the success path of each parse on made-up values, and returns what it made', () => {
    const r = rehearseCallPath();
    assert.equal(r.input.code, 'print(1)');
    assert.equal(r.request.toString('latin1'), 'CXr\0\0\0\0\x01\0\0\0\x3cdir=/sandbox/runs/0001-000000\nmax=1\ngrace=1\ncode=1\n\nprint(1)');
    assert.deepEqual(r.started, { t: 'started', pid: 2 });
    assert.deepEqual(r.exit, { t: 'exit', exitCode: 0, signal: null, killed: false, limited: false, orphans: false });
    assert.equal(r.text, 'stdout:\n1');
  });
});
