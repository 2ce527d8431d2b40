import * as assert from 'node:assert/strict';
import { killAllSparingSource } from '../../src/docker/container/guest';
import { TEST_RUNTIME, WAITING_TEST_MS, delay, dockerCli, programProcesses, run, uniqueSessionKey, useDocker, waitFor, warmSandbox } from './helpers';

/** How long ago (s) the program's own process was started, from the kernel's clock ticks. */
const OWN_AGE = [
  'import os',
  "start = int(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19])",
  "uptime = float(open('/proc/uptime').read().split()[0])",
  "print(round(uptime - start / os.sysconf('SC_CLK_TCK'), 1) >= 0.5)",
].join('\n');

/** The sandbox's processes other than PID 1, as `name pid` lines, seen by a root docker exec. */
async function others(container: string): Promise<string[]> {
  const list = "import os\nfor p in sorted(int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid())):\n    print(open(f'/proc/{p}/comm').read().strip(), p)";
  const out = await dockerCli('exec', '-u', '0', container, 'python3', '-c', list);
  return out.trim().split('\n').filter(Boolean);
}

/**
 * The minor page faults of a fixed piece of work on objects the runner made before the fork (each
 * module's namespace, its names and values: their reference counts are written), as the program
 * counts them: a write to a page its process has not copied yet is a fault.
 */
const FAULTS_OF_WORK = [
  'import resource, sys',
  'before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt',
  'n = sum(len(repr(k)) for m in list(sys.modules.values()) for k in list(getattr(m, "__dict__", {}).items()))',
  'print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)',
].join('\n');

describe('the warm runner forks the next child ahead of its run (integration)', function () {
  this.timeout(WAITING_TEST_MS);
  const sandboxes = useDocker();

  /**
   * Once the runner has forked the child for the next run (and the previous run's child, which may
   * outlive its answer by a moment, is gone), lets it wait `ageMs` on purpose: OWN_AGE tells a
   * program that runs in a child forked ahead (older than 0.5 s) from one forked on demand.
   */
  async function forkedAhead(container: string, ageMs: number): Promise<void> {
    await waitFor(async () => {
      const now = await others(container);
      return now.length === 1 && /^codeact-waiting \d+$/.test(now[0]!);
    }, 'the runner to fork the child for the next run, and nothing else to run');
    await delay(ageMs);
  }

  /** A warm sandbox after one call through its runner: its next child is waiting, `ageMs` old. */
  async function waitingSandbox(what: string, ageMs: number) {
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey(what);
    const container = (await warmSandbox(provider, key)).id;
    await run(provider, key, 'pass');
    await forkedAhead(container, ageMs);
    return { provider, key, container };
  }

  it('a warm call runs in a child forked before the call, which waited under its own name', async function () {
    const { provider, key, container } = await waitingSandbox('fork-ahead', 1_000);
    const waiting = await others(container);
    assert.equal(waiting.length, 1, waiting.join('; '));
    assert.match(waiting[0]!, /^codeact-waiting \d+$/);
    // It is not a program, to whoever counts them.
    assert.equal(await programProcesses(container), 0);
    // The program runs in it (started a second ago), under the interpreter's name, and alone.
    const r = await run(provider, key, `${OWN_AGE}\nprint(open('/proc/self/comm').read().strip())\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()) == [1, os.getpid()])`);
    assert.equal(r.text, 'stdout:\nTrue\npython3\nTrue');
  });

  it('the waiting child is not dumpable: another process of the sandbox user cannot read its memory', async function () {
    const { container } = await waitingSandbox('fork-ahead-dumpable', 0);
    const [line] = await others(container);
    const pid = line!.split(' ')[1]!;
    const probe = `try:\n    open('/proc/${pid}/mem', 'rb')\n    print('OPENED')\nexcept OSError as e:\n    print(e.strerror)`;
    const out = await dockerCli('exec', container, 'python3', '-c', probe);
    assert.equal(out.trim(), 'Permission denied');
  });

  it('a child forked ahead copies, before its run, the pages the calls before it wrote', async function () {
    // The kernel's pagemap says which pages a call wrote; gVisor has none, and learns nothing.
    if (TEST_RUNTIME === 'runsc') this.skip();
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey('pages-ahead');
    const container = (await warmSandbox(provider, key)).id;
    const faults: number[] = [];
    for (let i = 0; i < 3; i++) {
      // Forked (and done with its copies: a few ms) before the call, as between a chat's calls.
      await forkedAhead(container, i === 0 ? 0 : 1_000);
      faults.push(Number((await run(provider, key, FAULTS_OF_WORK)).stdout.head.toString()));
    }
    console.log(`faults of the work: ${faults.join(', ')}`);
    // The first child was forked before any call: it copied nothing ahead.
    assert.ok(faults[2]! * 4 <= faults[0]!, `faults of the work in three calls: ${faults.join(', ')}`);
  });

  it('a waiting child that was killed is replaced: the next call forks on demand, the one after is ahead again', async function () {
    const { provider, key, container } = await waitingSandbox('fork-ahead-killed', 0);
    // What the host's leftover kill does before it collects files: every process of the sandbox user.
    await dockerCli('exec', container, 'python3', '-c', killAllSparingSource([]));
    // Killed, then reaped by the runner; it forks no new one until the next call.
    await waitFor(async () => (await others(container)).length === 0, 'the killed child to be reaped');
    const r = await run(provider, key, OWN_AGE);
    assert.equal(r.text, 'stdout:\nFalse');
    await forkedAhead(container, 1_000);
    const again = await run(provider, key, OWN_AGE);
    assert.equal(again.text, 'stdout:\nTrue');
  });
});
