import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { executeCode } from '../../src/core/executeCode';
import { silentLogger } from '../../src/core/logger';
import { REPLAY_BUDGET_MS, replayChain, resumeSentence, SessionStates, STATE_LINES, stateChain, type ResumeSource, type StateRun } from '../../src/core/state';
import type { Sandbox, SandboxProvider } from '../../src/core/sandbox';
import { MAX_RECORDED_BLOCKED, RECORDED_HOSTS_BLOCKED, RECORDED_LAST, connectionLine, joinActivity, type Connection } from '../../src/core/network';
import { RunRecord } from '../../src/storage/runRecord';
import { ArtifactStore } from '../../src/storage/artifactStore';

/** A session run's record as the chain reads it. */
function run(runId: string, from: string, now: string, extra: Partial<StateRun['state']> & { sealed?: boolean } = {}): StateRun {
  const { sealed = true, ...state } = extra;
  return { runId, program: `# ${runId}`, filesIn: [], state: { reset: false, kept: now !== from, from, now, ...state }, sealed };
}

const ids = (chain: ReturnType<typeof stateChain>) => (chain.kind === 'ok' ? chain.runs.map((r) => r.runId) : chain);

describe('resume: the chain of kept runs (unit)', () => {
  it('follows each kept run back to an empty state, past failed and unkept calls', () => {
    const runs = [
      run('1', '', 'a'),
      run('2', 'a', 'a', { kept: false }), // failed: the state stayed
      run('3', 'a', 'b'),
      run('4', 'b', 'b', { kept: false }),
    ];
    assert.deepEqual(ids(stateChain(runs)), ['1', '3']);
  });

  it('starts at the last reset, and goes back past a call the sandbox ended under', () => {
    const runs = [run('1', '', 'a'), run('2', '', 'c', { reset: true }), run('3', 'c', 'd'), run('4', '', '', { kept: false, ended: true })];
    assert.deepEqual(ids(stateChain(runs)), ['2', '3']);
  });

  it('has nothing to restore when there is no session run, or the last state is empty', () => {
    assert.deepEqual(stateChain([]), { kind: 'none' });
    assert.deepEqual(stateChain([run('1', '', '', { kept: false })]), { kind: 'none' });
  });

  it('is broken by a missing link, a record whose seal fails, and a record from before the links', () => {
    assert.deepEqual(stateChain([run('2', 'a', 'b')]), { kind: 'broken', why: 'missing' });
    assert.deepEqual(stateChain([run('1', '', 'a', { sealed: false }), run('2', 'a', 'b')]), { kind: 'broken', why: 'changed' });
    const old: StateRun = { runId: '1', program: 'x = 1', filesIn: [], state: { reset: false, kept: true }, sealed: true };
    assert.deepEqual(stateChain([old]), { kind: 'broken', why: 'unrecorded' });
  });

  it('tells the model which way its state came back and what may differ', () => {
    assert.equal(
      resumeSentence({ kind: 'restored', runs: 2, ms: 1234, now: 'x', recorded: 'b', older: false, notes: [] }),
      "State: restored before this call by re-running this chat's 2 kept runs in order (1.2 s), because its sandbox had been removed. " +
        'Values computed from time, randomness, the network or workspace files that changed since may differ from before; files those runs wrote were written again.',
    );
    assert.equal(
      resumeSentence({ kind: 'partial', cause: 'removed', replayed: 1, of: 3, failure: "exit code 1: ValueError: invalid literal for int() with base 10: 'five'", ms: 10, now: 'x', recorded: 'a', notes: [] }),
      "State: partly restored. This chat's sandbox had been removed; re-running its kept run 2 of 3 failed (exit code 1: ValueError: invalid literal for int() with base 10: 'five'), " +
        'so this call started from the state after run 1. Re-create what is missing, or start over with reset.',
    );
    assert.equal(
      resumeSentence({ kind: 'refused', why: 'changed' }),
      "State: not restored. This chat's sandbox had been removed, and its kept runs were not re-run because the record of one of them was changed, or was not written for this chat; this call started from an empty state.",
    );
    assert.equal(resumeSentence({ kind: 'none' }), undefined);
  });
});

describe('resume: sealed records in the store (unit)', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-seal-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  function finish(store: ArtifactStore, digest: string, program: string, state = { reset: false, kept: true, from: '', now: 'aaaaaaaa' }): string {
    const w = store.beginRun(digest, 'chat');
    w.finish({
      startedAt: new Date(0).toISOString(),
      durationMs: 1,
      image: 'img',
      exitCode: 0,
      timedOut: false,
      cancelled: false,
      program,
      resultText: '',
      filesIn: [],
      stdoutTruncated: false,
      stderrTruncated: false,
      workDir: '/sandbox/runs/0001-abcdef',
      state,
    });
    return w.runId;
  }

  it("seals a session run's record; an edit, or a record sealed by another store, fails the check", async () => {
    const store = new ArtifactStore(path.join(root, 'a'));
    const runId = finish(store, 'chat1', 'x = 1');
    assert.deepEqual(
      (await store.stateRuns('chat1')).map((r) => [r.program, r.workDir, r.sealed]),
      [['x = 1', '/sandbox/runs/0001-abcdef', true]],
    );
    assert.equal(fs.statSync(path.join(root, 'a', '.state-key')).mode & 0o777, 0o600);

    const file = path.join(root, 'a', 'chat1', runId, 'run.json');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('x = 1', 'x = 2'));
    assert.deepEqual((await new ArtifactStore(path.join(root, 'a')).stateRuns('chat1')).map((r) => [r.program, r.sealed]), [['x = 2', false]]);

    // The same record, whole, in another store: its key is not the one that sealed it.
    const other = new ArtifactStore(path.join(root, 'b'));
    finish(other, 'chat1', 'y = 1');
    fs.cpSync(path.join(root, 'a', 'chat1', runId), path.join(root, 'b', 'chat1', runId), { recursive: true });
    fs.writeFileSync(path.join(root, 'b', 'chat1', runId, 'run.json'), fs.readFileSync(file, 'utf8').replace('x = 2', 'x = 1'));
    assert.deepEqual(
      (await new ArtifactStore(path.join(root, 'b')).stateRuns('chat1')).map((r) => [r.program, r.sealed]),
      [['x = 1', false], ['y = 1', true]],
    );
  });
});

describe('resume: a store key that is not a key (unit)', () => {
  it('is refused at once, never followed or waited on, and the record is kept unsealed', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-key-'));
    try {
      for (const [what, make] of [
        ['a dangling link', (key: string) => fs.symlinkSync(path.join(root, 'nowhere'), key)],
        ['a link to a file', (key: string) => (fs.writeFileSync(path.join(root, 'elsewhere'), Buffer.alloc(32)), fs.symlinkSync(path.join(root, 'elsewhere'), key))],
        ['a FIFO', (key: string) => execFileSync('mkfifo', [key])],
        ['a short file', (key: string) => fs.writeFileSync(key, 'short')],
      ] as const) {
        const dir = path.join(root, what.replace(/ /g, '-'));
        fs.mkdirSync(dir);
        make(path.join(dir, '.state-key'));
        const store = new ArtifactStore(dir);
        const w = store.beginRun('c', 'chat');
        const record = w.finish({ startedAt: new Date(0).toISOString(), durationMs: 1, image: 'i', exitCode: 0, timedOut: false, cancelled: false, program: 'x = 1', resultText: '', filesIn: [], stdoutTruncated: false, stderrTruncated: false, state: { reset: false, kept: true, from: '', now: 'a' } });
        assert.equal(record.stateSeal, undefined, what);
        assert.deepEqual((await store.stateRuns('c')).map((r) => r.sealed), [false], what);
      }
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('resume: in the pipeline (unit)', () => {
  /** A sandbox that runs programs as strings it remembers; its state id follows each kept run. */
  function fakeSandbox(opts: { empty: boolean; goneAtStart?: boolean; failOn?: string; exitOf?: Record<string, number>; networkOf?: Record<string, Connection[]> }) {
    const ran: string[] = [];
    let state = '';
    let n = 0;
    const sandbox: Sandbox = {
      id: 'fake',
      image: 'fake:1',
      holdsNoState: async () => opts.empty,
      async run(run) {
        // As the Lease does when the sandbox is found gone only as the program starts.
        if (opts.goneAtStart && run.rebuildState) {
          opts.goneAtStart = false;
          await run.rebuildState();
        }
        if (run.code === opts.failOn) throw new Error('the engine went away');
        run.onStart();
        ran.push(run.workDir ? `${run.code} @ ${run.workDir}` : run.code);
        const from = state;
        const exitCode = opts.exitOf?.[run.code] ?? 0;
        if (exitCode === 0) state = `s${++n}`;
        run.onStdout(Buffer.from('out\n'));
        const connections = opts.networkOf?.[run.code];
        return { exitCode, workDir: run.workDir ?? `/sandbox/runs/${n}`, state: { from, now: state, kept: exitCode === 0 }, ...(connections ? { network: { connections, complete: true } } : {}) };
      },
      async collect() {
        return { saved: [], missing: [], refused: [] };
      },
    };
    return { sandbox, ran };
  }
  const limits = { timeoutMs: 5000, outputBudgetBytes: 7800, maxOutputBytes: 1024 * 1024 };
  const recorded: StateRun[] = [
    { runId: '1', program: 'x = 1', workDir: '/sandbox/runs/0001-aaaaaa', filesIn: [], state: { reset: false, kept: true, from: '', now: 'a' }, sealed: true },
    { runId: '2', program: 'x += 1', workDir: '/sandbox/runs/0002-bbbbbb', filesIn: [], state: { reset: false, kept: true, from: 'a', now: 'b' }, sealed: true },
  ];
  const source: ResumeSource = { runs: async () => recorded, files: async () => [] };

  for (const way of ['before the program (a new sandbox)', 'as the program starts (found gone then)'] as const) {
    it(`replays the kept runs in their directories ${way}, and the record links to the chain`, async () => {
      const { sandbox, ran } = fakeSandbox(way.startsWith('before') ? { empty: true } : { empty: false, goneAtStart: true });
      const provider: SandboxProvider = { acquire: async () => sandbox };
      const states = new SessionStates();
      const report = await executeCode(provider, silentLogger, { code: 'print(x)', sessionKey: 'chat', state: { reset: false, states, resume: source } }, limits);
      assert.deepEqual(ran, ['x = 1 @ /sandbox/runs/0001-aaaaaa', 'x += 1 @ /sandbox/runs/0002-bbbbbb', 'print(x)']);
      assert.match(report.text, /^stdout:\nout\n\nState: restored before this call by re-running this chat's 2 kept runs in order \(\d\.\d s\)/);
      assert.ok(report.text.endsWith(`\n\n${STATE_LINES.kept}`), report.text);
      // Started from the rebuilt state, named as the records know it.
      assert.deepEqual(report.state, { reset: false, kept: true, from: 'b', now: 's3' });
    });
  }

  it("the replayed runs' connections are in the call's record, each marked with its run, and a name refused then is told", async () => {
    const connection = (host: string, time: number, allowed = true): Connection => ({
      time,
      host,
      port: 443,
      method: 'CONNECT',
      allowed,
      ...(allowed ? {} : { reason: 'not listed' as const }),
      bytesOut: 10,
      bytesIn: 20,
    });
    const { sandbox } = fakeSandbox({
      empty: true,
      networkOf: { 'x = 1': [connection('data.example.test', 1)], 'x += 1': [connection('gone.example.test', 2, false)], 'print(x)': [connection('data.example.test', 3)] },
    });
    const report = await executeCode({ acquire: async () => sandbox }, silentLogger, { code: 'print(x)', sessionKey: 'chat', state: { reset: false, states: new SessionStates(), resume: source } }, limits);
    assert.deepEqual(report.network, {
      connections: [
        { ...connection('data.example.test', 1), replayOf: '1' },
        { ...connection('gone.example.test', 2, false), replayOf: '2' },
        connection('data.example.test', 3),
      ],
      complete: true,
    });
    assert.equal(report.resumed && 'network' in report.resumed, false);
    assert.match(report.text, /\nThe sandbox's network proxy blocked: gone\.example\.test \(not on the allow-list, while an earlier kept call was re-run\)\./);
    assert.equal(
      connectionLine(report.network!.connections[0]!),
      '00:00:00.001 CONNECT data.example.test:443 allowed, 10 bytes out, 20 bytes in, by kept run 1 re-run to rebuild the state',
    );
    // The mark is kept by the store's schema, not dropped as an unknown field.
    assert.equal(RunRecord.shape.network.unwrap().shape.connections.element.parse(report.network!.connections[0]).replayOf, '1');
  });

  it('joined records keep the caps of one: refused connections past the caps are counted, and a part that was not whole makes the join not whole', () => {
    const refused = (i: number): Connection => ({ time: i, host: `h${i}.test`, port: 443, method: 'CONNECT', allowed: false, reason: 'not listed', bytesOut: 0, bytesIn: 0 });
    const caps = MAX_RECORDED_BLOCKED + RECORDED_LAST + RECORDED_HOSTS_BLOCKED;
    const many = Array.from({ length: caps + 5 }, (_, i) => refused(i));
    const joined = joinActivity([{ connections: many, complete: true }, { connections: [refused(-1)], complete: false, omitted: { allowed: 2, blocked: 0 } }]);
    assert.deepEqual([joined!.connections.length, joined!.omitted, joined!.complete], [caps, { allowed: 2, blocked: 6 }, false]);
    assert.equal(joined!.connections.at(-1)!.host, 'h-1.test');
    assert.equal(joinActivity([undefined, undefined]), undefined);
  });

  it('rebuilds nothing when the sandbox holds a state, or the call resets', async () => {
    for (const [empty, reset] of [
      [false, false],
      [true, true],
    ] as const) {
      const { sandbox, ran } = fakeSandbox({ empty });
      const report = await executeCode({ acquire: async () => sandbox }, silentLogger, { code: 'y = 2', sessionKey: 'chat', state: { reset, states: new SessionStates(), resume: source } }, limits);
      assert.deepEqual(ran, ['y = 2']);
      assert.equal(report.text, `stdout:\nout\n\n${STATE_LINES.kept}`);
    }
  });

  it('going back is refused before anything runs: no records, a broken chain, or further back than the chain', async () => {
    const cases: [ResumeSource | undefined, number, string][] = [
      [undefined, 1, "This host keeps no record of the chat's runs, so it cannot go back. Call execute_code without `rewind`."],
      [
        { runs: async () => [recorded[1]!], files: async () => [] },
        1,
        'This chat cannot go back, because the record of one of them is missing (deleted, or removed to keep within the storage budget). Call execute_code without `rewind`, or with `reset`: true.',
      ],
      [source, 3, "This chat's state holds 2 kept calls, so `rewind` can be at most 2. Call again with a smaller `rewind`, or with `reset`: true for an empty state."],
    ];
    for (const [resume, rewind, message] of cases) {
      const { sandbox, ran } = fakeSandbox({ empty: false });
      let renewed = 0;
      sandbox.renew = async () => void renewed++;
      const request = { code: 'print(x)', sessionKey: 'chat', state: { reset: false, states: new SessionStates(), rewind: { back: rewind }, ...(resume ? { resume } : {}) } };
      await assert.rejects(executeCode({ acquire: async () => sandbox }, silentLogger, request, limits), { code: 'invalid_input', message });
      assert.deepEqual([ran, renewed], [[], 0]);
    }
  });

  it('a rebuild the sandbox fails under runs no program: the half-rebuilt sandbox is replaced, and the next call rebuilds again', async () => {
    const { sandbox, ran } = fakeSandbox({ empty: true, failOn: 'x += 1' });
    let renewed = 0;
    sandbox.renew = async () => void renewed++;
    const states = new SessionStates();
    const request = { code: 'print(x)', sessionKey: 'chat', state: { reset: false, states, resume: source } };
    await assert.rejects(executeCode({ acquire: async () => sandbox }, silentLogger, request, limits), {
      code: 'sandbox_failed',
      message:
        "Rebuilding this chat's state stopped because the sandbox stopped while a run was re-run, so the program was not run; the next call rebuilds it in a new sandbox. Call again.",
    });
    assert.deepEqual([ran, renewed], [['x = 1 @ /sandbox/runs/0001-aaaaaa'], 1]);
    // The same sandbox (the fake keeps its id): it is tried again, as a new one would be.
    assert.equal(states.firstTryIn('chat', 'fake'), true);
  });

  it("a rebuilt state keeps its recorded id past a call that was not kept, and an older one than the host knew is said to be older", async () => {
    const { sandbox } = fakeSandbox({ empty: true, exitOf: { 'raise SystemExit(1)': 1 } });
    const states = new SessionStates();
    // The host last knew a state after "b" (its latest kept call's record is gone).
    states.settle('chat', { reset: false, succeeded: true, outcome: { from: 'b', now: 'c', kept: true } });
    const call = (code: string) => executeCode({ acquire: async () => sandbox }, silentLogger, { code, sessionKey: 'chat', state: { reset: false, states, resume: source } }, limits);
    const first = await call('raise SystemExit(1)');
    assert.match(first.text, /; it is an earlier state than the chat's last one, whose latest kept calls' records are gone\. Values computed/);
    assert.deepEqual(first.state, { reset: false, kept: false, from: 'b', now: 'b' });
    assert.deepEqual((await call('y = 1')).state, { reset: false, kept: true, from: 'b', now: 's3' });
  });
});

describe('resume: the time a replay may take (unit)', () => {
  /** Runs recorded as taking their whole time limit (120 s): three times 200 of them would be 20 hours. */
  const runs = Array.from({ length: 200 }, (_, i) => ({ runId: `r${i}`, program: `x = ${i}`, filesIn: [], durationMs: 120_000, state: { now: `s${i + 1}` } }));
  const realNow = Date.now;
  let now = 0;
  beforeEach(() => {
    now = realNow();
    Date.now = () => now;
  });
  afterEach(() => {
    Date.now = realNow;
  });

  /** A sandbox whose each run takes `ms` of the (fake) clock, or, with `ms` undefined, runs until it is stopped. */
  function sandbox(ms: (i: number) => number | undefined): { sandbox: Sandbox; ran: string[] } {
    const ran: string[] = [];
    return {
      ran,
      sandbox: {
        id: 'fake',
        image: 'fake:1',
        async run(r) {
          r.onStart();
          const took = ms(ran.length);
          ran.push(r.code);
          if (took === undefined) {
            await new Promise((resolve) => r.signal.addEventListener('abort', resolve, { once: true }));
            return { exitCode: null, workDir: r.workDir! };
          }
          now += took;
          return { exitCode: 0, workDir: r.workDir!, state: { from: '', now: `s${ran.length}`, kept: true } };
        },
        async collect() {
          return { saved: [], missing: [], refused: [] };
        },
      },
    };
  }
  const files = { files: async () => [] };

  it('is bounded at 5 minutes in all, however long the runs took as calls: past it the replay ends where it got, and the model is told so', async () => {
    assert.equal(REPLAY_BUDGET_MS, 5 * 60 * 1000);
    const { sandbox: s, ran } = sandbox(() => 100_000);
    const replay = await replayChain(s, files, runs, 120_000, new AbortController().signal, silentLogger);
    assert.deepEqual(ran, ['x = 0', 'x = 1', 'x = 2']);
    assert.deepEqual({ ...replay, ms: 0 }, {
      kind: 'partial',
      replayed: 3,
      of: 200,
      failure: 'the replay ran past its time budget of 5 minutes',
      budgetMs: 300_000,
      ms: 0,
      now: 's3',
      recorded: 's3',
      notes: [],
    });
    assert.equal(
      resumeSentence({ ...(replay as Extract<typeof replay, { kind: 'partial' }>), cause: 'removed' }),
      "State: partly restored. This chat's sandbox had been removed; re-running its 200 kept runs did not finish within the 5 minutes a rebuild may take (3 ran), " +
        'so this call started from the state after run 3. Re-create what is missing, or start over with reset.',
    );
  });

  it('a run stopped by what was left of the budget ran past the budget, not past its own time limit', async () => {
    // Two runs take all but 50 ms of the budget; the third runs until it is stopped.
    const { sandbox: s, ran } = sandbox((i) => (i === 0 ? 200_000 : i === 1 ? 99_950 : undefined));
    const replay = await replayChain(s, files, runs, 120_000, new AbortController().signal, silentLogger);
    assert.equal(ran.length, 3);
    assert.equal(replay.kind === 'partial' && [replay.replayed, replay.failure, replay.budgetMs].join(' | '), '2 | the replay ran past its time budget of 5 minutes | 300000');
  });
});
