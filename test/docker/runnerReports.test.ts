import * as assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { RunnerChannel, type RunnerOutcome } from '../../src/docker/run/runnerChannel';
import { IMAGE, TEST_LIMITS, WAITING_TEST_MS, WAIT_MS, docker, log, recentLog, run, uniqueSessionKey, useDocker, warmSandbox } from './helpers';

/** What the warm runner reports about a run, and what it preloads (real engine, real runner). */
describe('the warm runner reports (integration)', function () {
  this.timeout(WAITING_TEST_MS);
  const sandboxes = useDocker();

  describe('preloading', function () {
    it('leaves out a module that prints when imported, and no program gets what it printed', async function () {
      const provider = sandboxes.makeProvider({ spec: () => ({ image: IMAGE, limits: TEST_LIMITS, preloadModules: ['json', 'this'], preloadWhen: 'start' }) });
      const key = uniqueSessionKey('preload-prints');
      const code = 'import os, sys\nprint(os.getppid(), [m for m in ("json", "this") if m in sys.modules])';
      // Until it is ready (it starts over without `this`), a call would run by docker exec.
      await warmSandbox(provider, key);
      const r = await run(provider, key, code);
      assert.equal(r.text, "stdout:\n1 ['json']");
    });
  });

  describe('says whether the kernel killed a program for memory', function () {
    const provider = sandboxes.makeProvider({ limits: { memoryMb: 96 } });
    const key = uniqueSessionKey('oom');
    let sandboxId = '';
    let channel: RunnerChannel;
    let runs = 0;

    /** One program through a channel of our own (a second host attached to PID 1's stdio). */
    const runOnChannel = async (code: string): Promise<{ outcome: RunnerOutcome; output: string }> => {
      const chunks: Buffer[] = [];
      const dir = `/sandbox/runs/${9000 + ++runs}-${randomBytes(3).toString('hex')}`;
      const outcome = await channel.run(
        runs,
        { dir, code: Buffer.from(code), maxOutputBytes: 1024 * 1024, orphanGraceMs: 1000 },
        { onStdout: (c) => chunks.push(c), onStderr: (c) => chunks.push(c) },
        new AbortController().signal,
        3000,
      );
      return { outcome, output: Buffer.concat(chunks).toString('utf8') };
    };

    before(async function () {
      // The provider's channel first: the last test's call must be forked from the runner.
      sandboxId = (await warmSandbox(provider, key)).id;
      channel = await RunnerChannel.open(docker, docker.getContainer(sandboxId), 'oom-test', log);
      channel.greet();
      assert.equal(await channel.whenReady(WAIT_MS, new AbortController().signal), true, `the runner answered; log:\n${recentLog()}`);
    });

    after(() => channel?.close());

    it('a memory hog under the memory limit: oomKilled true', async function () {
      const { outcome, output } = await runOnChannel('print("growing", flush=True)\nx = []\nwhile True:\n    x.append(b"\\x01" * (4 << 20))');
      assert.deepEqual(outcome, { kind: 'exit', exitCode: 137, killed: false, limited: false, orphans: false, oomKilled: true });
      assert.equal(output, 'growing\n');
    });

    it('a program that sends itself SIGKILL, and one that exits: oomKilled false', async function () {
      const killed = await runOnChannel('import os\nprint("bye", flush=True)\nos.kill(os.getpid(), 9)');
      assert.deepEqual(killed.outcome, { kind: 'exit', exitCode: 137, killed: false, limited: false, orphans: false, oomKilled: false });
      assert.equal(killed.output, 'bye\n');
      const exited = await runOnChannel('raise SystemExit(137)');
      assert.deepEqual(exited.outcome, { kind: 'exit', exitCode: 137, killed: false, limited: false, orphans: false, oomKilled: false });
    });

    it('the sandbox and its own channel live on', async function () {
      const r = await run(provider, key, 'import os\nprint(os.getppid())');
      assert.equal(r.text, 'stdout:\n1');
      assert.equal(r.sandboxId, sandboxId);
    });
  });
});
