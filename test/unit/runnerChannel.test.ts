import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { encodeFrame, type RunRequest } from '../../src/core/runnerProtocol';
import { AHEAD_DEADLINE_MS, ChannelClosedError, HELLO_RETRY_MS, LOG_LINE_MAX, RESTART_DEADLINE_MS, RunnerChannel, START_DEADLINE_MS, type RunnerOutcome } from '../../src/docker/run/runnerChannel';
import { FakeClock, settle } from './fakes/clock';
import { FakeRunner } from './fakes/fakeRunner';
import { frameError, hostFrame, runnerFrame, runnerReply, type GoldenRequest } from './fakes/golden';
import { recordingLogger } from './vscode/fakes';

/** The nonce of the golden hello: the channel greets with exactly the fixture's bytes. */
const NONCE = hostFrame('hello').nonce!;
const KILL_GRACE_MS = 5_000;
const PENDING = Symbol('pending');

/** The promise's value if it has settled by now, else PENDING. */
function peek<T>(p: Promise<T>): Promise<T | typeof PENDING> {
  return Promise.race([p, settle().then((): typeof PENDING => PENDING)]);
}

function requestOf(g: GoldenRequest): RunRequest {
  const { code, ...rest } = g;
  return { ...rest, ...(code !== undefined ? { code: Buffer.from(code, 'utf8') } : {}) };
}

const RUN_7 = hostFrame('run with its program (non-ASCII, blank lines)');
const RUN_8 = hostFrame('run of a program already in place');

/** A channel over a fake runner, on a fake clock. */
function connect(nonce = NONCE) {
  const clock = new FakeClock();
  const runner = new FakeRunner();
  const log = recordingLogger();
  const channel = RunnerChannel.over(runner.stream, 'sb', log, { demux: runner.demux, clock, nonce: () => nonce });
  return { clock, runner, log, channel };
}

/** Connected and greeted, the runner answering with the golden hello. */
async function ready() {
  const c = connect();
  c.runner.answer('h', () => [runnerFrame('hello')]);
  c.channel.greet();
  await settle();
  assert.equal(c.channel.state, 'ready');
  c.log.lines.length = 0;
  return c;
}

/** Runs a program, collecting its output as hex. */
function start(channel: RunnerChannel, id: number, request: RunRequest, signal = new AbortController().signal) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  /** What the caller was told, in order. */
  const told: string[] = [];
  const outcome = channel.run(
    id,
    request,
    {
      onStdout: (c) => {
        told.push('stdout');
        stdout.push(c.toString('hex'));
      },
      onStderr: (c) => {
        told.push('stderr');
        stderr.push(c.toString('hex'));
      },
      onStarted: () => told.push('started'),
    },
    signal,
    KILL_GRACE_MS,
  );
  return { outcome, stdout, stderr, told };
}

const READY_LINE =
  'info: sandbox sb: runner ready (Python 3.11.2; preloaded numpy, matplotlib.pyplot; not in the image: pandas; not preloaded, not transparent: seaborn(threads))';

describe('runner channel over a stream, with a fake runner and clock (unit)', () => {
  describe('the handshake', () => {
    it('greets with the golden hello and is ready at the golden answer', async () => {
      const { runner, log, channel, clock } = connect();
      runner.answer('h', () => [runnerFrame('hello')]);
      assert.equal(channel.state, 'connecting');
      channel.greet();
      await settle();
      assert.deepEqual(runner.kinds, ['h0']);
      assert.equal(runner.received[0]!.bytes.toString('hex'), hostFrame('hello').bytes);
      assert.equal(channel.state, 'ready');
      assert.deepEqual(channel.info, runnerReply('hello'));
      assert.deepEqual(log.lines, [READY_LINE]);
      // The retry timer went with the answer.
      assert.equal(clock.timers, 0);
    });

    it('repeats the hello every second until one is answered, then stops', async () => {
      const { runner, channel, clock } = connect();
      channel.greet();
      await clock.advance(HELLO_RETRY_MS - 1);
      assert.deepEqual(runner.kinds, ['h0']);
      await clock.advance(1);
      assert.deepEqual(runner.kinds, ['h0', 'h0']);
      await clock.advance(2 * HELLO_RETRY_MS);
      assert.deepEqual(runner.kinds, ['h0', 'h0', 'h0', 'h0']);
      // Each one the same golden bytes: the nonce is the handshake's, not the try's.
      assert.deepEqual(new Set(runner.received.map((f) => f.bytes.toString('hex'))), new Set([hostFrame('hello').bytes]));
      // A second greet does not start a second round of hellos.
      channel.greet();
      await settle();
      assert.equal(runner.received.length, 4);

      runner.send(runnerFrame('hello'));
      await settle();
      assert.equal(channel.state, 'ready');
      await clock.advance(5 * HELLO_RETRY_MS);
      assert.equal(runner.received.length, 4);
      assert.equal(clock.timers, 0);
    });

    it('takes no answer to another hello: a reply with another nonce leaves it connecting', async () => {
      const { runner, channel } = connect();
      channel.greet();
      runner.send(runnerFrame('hello with a recursion problem'));
      await settle();
      assert.equal(channel.state, 'connecting');
      assert.equal(channel.info, undefined);
      runner.send(runnerFrame('hello'));
      await settle();
      assert.equal(channel.state, 'ready');
    });

    it('an unusable runner: not ready, detached at once, and runs are declined without a frame', async () => {
      // The golden unusable hello answers the nonce "ab".
      const { runner, log, channel, clock } = connect('ab');
      runner.answer('h', () => [runnerFrame('hello of an unusable runner')]);
      const ready = channel.whenReady(60_000, new AbortController().signal);
      channel.greet();
      assert.equal(await peek(ready), false);
      assert.deepEqual(channel.info, runnerReply('hello of an unusable runner'));
      assert.deepEqual(log.lines, ['warn: sandbox sb: runner not usable (runner unavailable: ImportError: no module named ctypes); programs run by docker exec']);
      assert.equal(runner.stream.destroyed, true);
      assert.equal(clock.timers, 0);
      // As the code stands, 'unusable' lasts only until the detached stream's close arrives, which
      // fails the channel: it ends 'broken', so the next call reconnects and asks again.
      assert.equal(channel.state, 'broken');
      assert.equal(channel.reason, 'the runner channel closed');
      assert.deepEqual(await start(channel, 7, requestOf(RUN_7.request!)).outcome, { kind: 'declined', reason: 'runner broken', written: false });
      assert.deepEqual(runner.kinds, ['h0']);
      assert.equal(log.lines.length, 1);
    });
  });

  describe('whenReady', () => {
    it('resolves true when the runner becomes ready within its time', async () => {
      const { runner, channel, clock } = connect();
      channel.greet();
      const ready = channel.whenReady(60_000, new AbortController().signal);
      await clock.advance(1_500);
      assert.equal(await peek(ready), PENDING);
      runner.send(runnerFrame('hello'));
      assert.equal(await peek(ready), true);
      assert.equal(clock.timers, 0);
    });

    it('resolves false when its time is up, not a millisecond before', async () => {
      const { channel, clock } = connect();
      const ready = channel.whenReady(300, new AbortController().signal);
      await clock.advance(299);
      assert.equal(await peek(ready), PENDING);
      await clock.advance(1);
      assert.equal(await peek(ready), false);
      assert.equal(channel.state, 'connecting');
    });

    it('resolves false when its signal aborts', async () => {
      const { channel, clock } = connect();
      const abort = new AbortController();
      const ready = channel.whenReady(60_000, abort.signal);
      abort.abort();
      assert.equal(await peek(ready), false);
      assert.equal(clock.timers, 0);
    });

    it('answers at once when the state is settled', async () => {
      const { channel } = await ready();
      assert.equal(await peek(channel.whenReady(0, new AbortController().signal)), true);
      channel.close();
      assert.equal(await peek(channel.whenReady(60_000, new AbortController().signal)), false);
    });
  });

  describe('a run', () => {
    it('sends the golden run and gives the golden started, output and exit replies', async () => {
      const { runner, channel, clock } = await ready();
      runner.answer('r', () => ['started', 'stdout bytes, not UTF-8', 'stderr, empty', 'exit 3'].map(runnerFrame));
      const run = start(channel, 7, requestOf(RUN_7.request!));
      assert.deepEqual(await run.outcome, { kind: 'exit', exitCode: 3, killed: false, limited: false, orphans: false, oomKilled: false });
      assert.deepEqual(run.stdout, ['68656c6c6f0afffe']);
      assert.deepEqual(run.stderr, ['']);
      // The caller's time limit starts with the started reply.
      assert.deepEqual(run.told, ['started', 'stdout', 'stderr']);
      assert.deepEqual(runner.kinds, ['h0', 'r7']);
      assert.equal(runner.received[1]!.bytes.toString('hex'), RUN_7.bytes);
      assert.equal(channel.state, 'ready');
      // The start deadline went with the start.
      assert.equal(clock.timers, 0);
    });

    it("gives the exit's oomKilled only when the runner could tell, and a session's state as it is", async () => {
      const { runner, channel } = await ready();
      runner.answer('r', () => ['started', 'exit by SIGKILL, the counter unreadable'].map(runnerFrame));
      assert.deepEqual(await start(channel, 7, requestOf(RUN_7.request!)).outcome, { kind: 'exit', exitCode: 137, killed: true, limited: false, orphans: false });
      runner.answer('r', () => ['started', 'exit 0 in session mode, not kept: threads left running'].map(runnerFrame));
      assert.deepEqual(await start(channel, 7, requestOf(RUN_7.request!)).outcome, {
        kind: 'exit',
        exitCode: 0,
        killed: false,
        limited: false,
        orphans: false,
        oomKilled: false,
        state: { from: '0a1b2c3d', now: '0a1b2c3d', kept: false, holder: 31, reason: 'threads' },
      });
    });

    it('an exit that says the runner starts over to preload: connecting and greeting until the new runner answers', async () => {
      const { runner, channel, clock, log } = await ready();
      runner.answer('h', () => []); // the new runner is still importing
      runner.answer('r', () => ['started', 'exit 0, starting over to preload what it imported'].map(runnerFrame));
      assert.deepEqual(await start(channel, 7, requestOf(RUN_7.request!)).outcome, { kind: 'exit', exitCode: 0, killed: false, limited: false, orphans: false, oomKilled: false });
      assert.equal(channel.state, 'connecting');
      assert.equal(channel.restarting, true);
      assert.deepEqual(runner.kinds, ['h0', 'r7', 'h0']);
      assert.deepEqual(log.lines, ['info: sandbox sb: the runner starts over to preload numpy, pandas (a program imported them)']);
      assert.deepEqual(await start(channel, 8, requestOf(RUN_8.request!)).outcome, { kind: 'declined', reason: 'runner connecting', written: false });
      await clock.advance(HELLO_RETRY_MS);
      assert.deepEqual(runner.kinds, ['h0', 'r7', 'h0', 'h0']);
      runner.send(runnerFrame('hello'));
      await settle();
      assert.equal(channel.state, 'ready');
      assert.equal(channel.restarting, false);
      assert.equal(clock.timers, 0);
    });

    it('a runner that does not come back after starting over: the channel is broken at its deadline, not a millisecond before', async () => {
      const { runner, channel, clock, log } = await ready();
      runner.answer('h', () => []);
      runner.answer('r', () => ['started', 'exit 0, starting over to preload what it imported'].map(runnerFrame));
      await start(channel, 7, requestOf(RUN_7.request!)).outcome;
      await clock.advance(RESTART_DEADLINE_MS - 1);
      assert.equal(channel.state, 'connecting');
      await clock.advance(1);
      assert.equal(channel.state, 'broken');
      assert.equal(channel.reason, 'the runner did not come back after starting over');
      assert.equal(channel.restarting, false);
      assert.equal(log.lines.at(-1), 'warn: sandbox sb: the runner did not come back within 120 s of starting over');
      assert.equal(clock.timers, 0);
    });

    it('a declined run gives the golden reason, and the channel takes the next run', async () => {
      const { runner, channel } = await ready();
      runner.answer('r', () => [runnerFrame('declined, a non-ASCII reason')]);
      assert.deepEqual(await start(channel, 8, requestOf(RUN_8.request!)).outcome, { kind: 'declined', reason: 'shadows pändas ✓ ?', written: true });
      assert.equal(runner.received[1]!.bytes.toString('hex'), RUN_8.bytes);
      assert.equal(channel.state, 'ready');
      runner.answer('r', () => ['started', 'exit 3'].map(runnerFrame));
      assert.equal(((await start(channel, 7, requestOf(RUN_7.request!)).outcome) as { exitCode: number }).exitCode, 3);
      assert.deepEqual(runner.kinds, ['h0', 'r8', 'r7']);
    });

    it('declines without a frame while the runner is not ready, or while another run is under way', async () => {
      const { runner, channel } = connect();
      assert.deepEqual(await start(channel, 7, requestOf(RUN_7.request!)).outcome, { kind: 'declined', reason: 'runner connecting', written: false });
      assert.deepEqual(runner.kinds, []);

      const c = await ready();
      c.runner.answer('r', () => [runnerFrame('started')]);
      const first = start(c.channel, 7, requestOf(RUN_7.request!));
      await settle();
      assert.deepEqual(await start(c.channel, 8, requestOf(RUN_8.request!)).outcome, { kind: 'declined', reason: 'runner busy', written: false });
      assert.deepEqual(c.runner.kinds, ['h0', 'r7']);
      c.runner.send(runnerFrame('exit 3'));
      assert.equal(((await first.outcome) as { exitCode: number }).exitCode, 3);
    });

    it('a runner gone silent: at the start deadline the run fails unstarted, is killed, and the channel is broken', async () => {
      const { runner, log, channel, clock } = await ready();
      const run = start(channel, 7, requestOf(RUN_7.request!));
      await clock.advance(START_DEADLINE_MS - 1);
      assert.equal(await peek(run.outcome), PENDING);
      assert.equal(channel.state, 'ready');
      await clock.advance(1);
      const outcome = (await peek(run.outcome)) as RunnerOutcome;
      assert.deepEqual(outcome, { kind: 'failed', started: false, error: new Error('the runner did not start the program') });
      // Whatever it was doing, it must not start the program later.
      assert.deepEqual(runner.kinds, ['h0', 'r7', 'k7']);
      assert.deepEqual(runner.received[2]!.bytes, encodeFrame('k', 7));
      assert.equal(channel.state, 'broken');
      assert.equal(channel.reason, 'run 7 was not started within 15000 ms');
      assert.equal(runner.stream.destroyed, true);
      assert.deepEqual(log.lines, []);
      assert.equal(clock.timers, 0);
    });

    it('the start deadline covers the waits the runner may make before it says started, and 5 s more', () => {
      const source = fs.readFileSync(path.join(__dirname, '../../resources/runner/00_protocol.py'), 'utf8');
      const seconds = (name: string) => Number(new RegExp(`^${name} = ([0-9.]+)$`, 'm').exec(source)?.[1]);
      assert.equal(seconds('DYING_GRACE_S'), 5);
      assert.equal(seconds('HOLDER_START_SECONDS'), 5);
      assert.equal(START_DEADLINE_MS, (seconds('DYING_GRACE_S') + seconds('HOLDER_START_SECONDS')) * 1000 + 5_000);
    });

    it('a stream that closes mid-run: the run fails as started, the channel is broken, and no failure is logged', async () => {
      const { runner, log, channel, clock } = await ready();
      runner.answer('r', () => [runnerFrame('started')]);
      const run = start(channel, 7, requestOf(RUN_7.request!));
      await settle();
      runner.hangUp();
      const outcome = (await run.outcome) as Extract<RunnerOutcome, { kind: 'failed' }>;
      assert.deepEqual([outcome.kind, outcome.started, outcome.error instanceof ChannelClosedError, outcome.error.message], ['failed', true, true, 'the runner channel closed']);
      assert.equal(channel.state, 'broken');
      assert.equal(channel.reason, 'the runner channel closed');
      assert.deepEqual(log.lines, []);
      assert.equal(clock.timers, 0);
    });

    it("a stop sends the kill, and the runner's exit ends the run", async () => {
      const { runner, channel } = await ready();
      runner.answer('r', () => [runnerFrame('started')]);
      runner.answer('k', () => [runnerFrame('exit by SIGKILL, the counter unreadable')]);
      const abort = new AbortController();
      const run = start(channel, 7, requestOf(RUN_7.request!), abort.signal);
      await settle();
      abort.abort();
      assert.deepEqual(await run.outcome, { kind: 'exit', exitCode: 137, killed: true, limited: false, orphans: false });
      assert.deepEqual(runner.kinds, ['h0', 'r7', 'k7']);
      assert.equal(channel.state, 'ready');
    });

    it('a kill the runner does not confirm within its grace breaks the channel', async () => {
      const { runner, log, channel, clock } = await ready();
      runner.answer('r', () => [runnerFrame('started')]);
      const abort = new AbortController();
      const run = start(channel, 7, requestOf(RUN_7.request!), abort.signal);
      await settle();
      abort.abort();
      await clock.advance(KILL_GRACE_MS - 1);
      assert.equal(await peek(run.outcome), PENDING);
      await clock.advance(1);
      assert.deepEqual(await peek(run.outcome), { kind: 'failed', started: true, error: new Error('the runner did not confirm the kill') });
      assert.deepEqual(log.lines, ['warn: sandbox sb: the runner did not confirm the kill of run 7']);
      assert.equal(channel.reason, 'run 7 was not confirmed killed');
      assert.equal(channel.state, 'broken');
    });

    it('a frame that breaks the protocol fails the run and the channel for good', async () => {
      const { runner, log, channel } = await ready();
      runner.answer('r', () => [runnerFrame('started')]);
      const run = start(channel, 7, requestOf(RUN_7.request!));
      await settle();
      const bad = frameError('bad magic');
      runner.send(bad.bytes, runnerFrame('exit 3'));
      const outcome = (await run.outcome) as Extract<RunnerOutcome, { kind: 'failed' }>;
      assert.deepEqual([outcome.kind, outcome.started, outcome.error.name, outcome.error.message], ['failed', true, 'ProtocolError', bad.error]);
      assert.deepEqual(log.lines, [`warn: sandbox sb: runner channel failed: ${bad.error}`]);
      assert.equal(channel.state, 'broken');
      assert.equal(channel.reason, bad.error);
    });

    it("drops frames of a run that is over; a frame of no run that is not a hello breaks the channel", async () => {
      const { runner, log, channel } = await ready();
      runner.answer('r', () => ['started', 'exit 3'].map(runnerFrame));
      await start(channel, 7, requestOf(RUN_7.request!)).outcome;
      runner.send(runnerFrame('stdout bytes, not UTF-8'));
      await settle();
      assert.equal(channel.state, 'ready');
      runner.send(encodeFrame('O', 0, Buffer.from('x')));
      await settle();
      assert.equal(channel.state, 'broken');
      assert.deepEqual(log.lines, ['warn: sandbox sb: runner channel failed: unexpected O frame']);
    });
  });

  describe('a fork ahead of a session call', () => {
    /** The runner's answer to `a` with this id. */
    const aheadFrame = (id: number, ready: unknown) => encodeFrame('A', id, Buffer.from(JSON.stringify({ t: 'ahead', ready }), 'utf8'));

    it('sends `a` with its id and gives the answer; runs are declined meanwhile, and taken after it', async () => {
      const { runner, channel } = await ready();
      const first = channel.ahead(9);
      await settle();
      assert.deepEqual(runner.kinds, ['h0', 'a9']);
      assert.deepEqual(runner.received[1]!.bytes, encodeFrame('a', 9));
      assert.deepEqual(await start(channel, 7, requestOf(RUN_7.request!)).outcome, { kind: 'declined', reason: 'runner busy', written: false });
      assert.equal(await channel.ahead(10), false);
      runner.send(aheadFrame(9, true));
      assert.equal(await first, true);
      runner.answer('a', (f) => [aheadFrame(f.id, false)]);
      assert.equal(await channel.ahead(11), false);
      runner.answer('r', () => ['started', 'exit 3'].map(runnerFrame));
      assert.equal(((await start(channel, 7, requestOf(RUN_7.request!)).outcome) as { exitCode: number }).exitCode, 3);
      assert.deepEqual(runner.kinds, ['h0', 'a9', 'a11', 'r7']);
      assert.equal(channel.state, 'ready');
    });

    it('is not asked of a runner that is not ready', async () => {
      const { runner, channel } = connect();
      assert.equal(await channel.ahead(9), false);
      assert.deepEqual(runner.kinds, []);
    });

    it('an answer of the wrong shape, or another frame, breaks the channel for good', async () => {
      for (const reply of [aheadFrame(9, 'yes'), encodeFrame('S', 9, Buffer.from('{"t":"started","pid":5}'))]) {
        const { runner, channel } = await ready();
        runner.answer('a', () => [reply]);
        assert.equal(await channel.ahead(9), false);
        assert.equal(channel.state, 'broken');
      }
    });

    it('a runner gone silent: the channel is broken at the deadline, not a millisecond before', async () => {
      const { channel, clock } = await ready();
      const ahead = channel.ahead(9);
      await clock.advance(AHEAD_DEADLINE_MS - 1);
      assert.equal(await peek(ahead), PENDING);
      assert.equal(channel.state, 'ready');
      await clock.advance(1);
      assert.equal(await peek(ahead), false);
      assert.equal(channel.state, 'broken');
      assert.equal(channel.reason, 'the fork ahead 9 was not answered within 25000 ms');
      assert.equal(clock.timers, 0);
    });

    it('the deadline covers the waits the runner may make for it, and 10 s more', () => {
      const source = fs.readFileSync(path.join(__dirname, '../../resources/runner/00_protocol.py'), 'utf8');
      const holder = fs.readFileSync(path.join(__dirname, '../../resources/runner/60_holder.py'), 'utf8');
      const seconds = (text: string, name: string) => Number(new RegExp(`^${name} = ([0-9.]+)$`, 'm').exec(text)?.[1]);
      assert.equal(AHEAD_DEADLINE_MS, (2 * seconds(holder, 'HOLDER_STOP_SECONDS') + seconds(source, 'HOLDER_START_SECONDS')) * 1000 + 10_000);
    });
  });

  it("logs the runner's stderr line by line, each line cut to its first 500 characters", async () => {
    const { runner, log } = connect();
    runner.stderr.write('[codeact-runner] one\n[codeact-runner] tw');
    await settle();
    assert.deepEqual(log.lines, ['info: sandbox sb runner: [codeact-runner] one']);
    runner.stderr.write('o\n');
    await settle();
    runner.stderr.write(`${'x'.repeat(LOG_LINE_MAX + 100)}\n`);
    // A line with no end yet keeps only its last 500 characters while it waits for one.
    runner.stderr.write(`${'a'.repeat(100)}${'y'.repeat(LOG_LINE_MAX)}`);
    await settle();
    runner.stderr.write('\n');
    await settle();
    assert.deepEqual(log.lines.slice(1), [
      'info: sandbox sb runner: [codeact-runner] two',
      `info: sandbox sb runner: ${'x'.repeat(LOG_LINE_MAX)}`,
      `info: sandbox sb runner: ${'y'.repeat(LOG_LINE_MAX)}`,
    ]);
  });

  it('close detaches: broken for the reason "closed", the stream destroyed, a waiting whenReady false', async () => {
    const { runner, channel, clock } = connect();
    channel.greet();
    const ready = channel.whenReady(60_000, new AbortController().signal);
    channel.close();
    assert.equal(await peek(ready), false);
    assert.equal(channel.state, 'broken');
    assert.equal(channel.reason, 'closed');
    assert.equal(runner.stream.destroyed, true);
    assert.equal(clock.timers, 0);
  });
});
