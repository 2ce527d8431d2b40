import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { guestSource } from '../../src/docker/container/runnerProgram';
import { killAllSparingSource, oomCountSource } from '../../src/docker/container/guest';

/** The host's docker exec programs are the runner's part 05 and one call: one copy of the logic. */
describe('guest programs (unit)', () => {
  const part = fs.readFileSync(path.join(__dirname, '../../resources/runner/05_guest.py'), 'utf8');

  it('are made of the runner part 05 as built', () => {
    assert.equal(guestSource(), part);
  });

  it('kill everything of the sandbox user, or all but the spared pids; only integers above 1 reach the source', () => {
    assert.equal(killAllSparingSource([]), `${part}\n_kill_all(None, (), wait=True)\n`);
    assert.equal(killAllSparingSource([42, 1, 0, 7.5, 43]), `${part}\n_kill_all(None, (42, 43,), wait=True)\n`);
  });

  it('print the OOM-kill count, or nothing where no cgroup file has it', () => {
    assert.equal(oomCountSource(), `${part}\nn = read_oom_kills()\nif n is not None:\n    print(n)\n`);
  });
});
