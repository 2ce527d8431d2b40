import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { executeCode } from '../../src/core/executeCode';
import { silentLogger } from '../../src/core/logger';
import { sessionDigest } from '../../src/core/session';
import { resumeSentence, SessionStates, START_TOKEN_MS, stateChain, type ResumeSource, type StateRun } from '../../src/core/state';
import type { Sandbox } from '../../src/core/sandbox';
import { executeToolCall, type ToolCallOptions } from '../../src/core/toolCall';
import { ArtifactStore } from '../../src/storage/artifactStore';
import type { RunRecord } from '../../src/storage/runRecord';
import { RunRecording } from '../../src/storage/runRecorder';
import { otherChats } from '../../src/storage/startTokens';
import { outcome } from './storeFixtures';

/**
 * A chat started from another chat's state: the token the person hands the model, the records
 * that link the new chat's chain into the other chat's, and the call that rebuilds it.
 */

const limits = { timeoutMs: 5000, outputBudgetBytes: 7800, maxOutputBytes: 1024 * 1024 };

/** A sandbox that runs programs as strings it remembers; its state id follows each kept run. */
function fakeSandbox() {
  const ran: string[] = [];
  let state = '';
  let n = 0;
  let renewed = 0;
  const sandbox: Sandbox = {
    id: 'fake',
    image: 'fake:1',
    holdsNoState: async () => state === '',
    async renew() {
      renewed++;
      state = '';
    },
    async run(run) {
      run.onStart();
      ran.push(run.workDir ? `${run.code} @ ${run.workDir}` : run.code);
      const from = state;
      const exitCode = run.code.includes('raise') ? 1 : 0;
      if (exitCode === 0) state = `s${++n}`;
      return { exitCode, workDir: run.workDir ?? `/sandbox/runs/${String(n).padStart(4, '0')}-cccccc`, state: { from, now: state, kept: exitCode === 0 } };
    },
    async collect() {
      return { saved: [], missing: [], refused: [] };
    },
  };
  return { sandbox, ran, renewed: () => renewed };
}

describe('starting a chat from another chat’s state (unit)', () => {
  let root: string;
  let store: ArtifactStore;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-startfrom-'));
    store = new ArtifactStore(root);
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  /** A finished session run of `chat`, as the pipeline records it. */
  function record(chat: string, program: string, state: NonNullable<RunRecord['state']>, workDir?: string): string {
    const w = store.beginRun(chat, 'chat');
    w.finish(outcome({ program, filesIn: [], ...(workDir ? { workDir } : {}), state }));
    return w.runId;
  }

  /** Chat "a": three kept runs; the second is the one the person chooses. */
  function chatA(): { first: string; chosen: string; third: string } {
    return {
      first: record('a', 'x = 1', { reset: false, kept: true, from: '', now: 'a1' }, '/sandbox/runs/0001-aaaaaa'),
      chosen: record('a', 'x += 10', { reset: false, kept: true, from: 'a1', now: 'a2' }, '/sandbox/runs/0002-aaaaaa'),
      third: record('a', 'x = 999', { reset: false, kept: true, from: 'a2', now: 'a3' }, '/sandbox/runs/0003-aaaaaa'),
    };
  }

  describe('the token', () => {
    it("names the chat and run it was made for, and only this store's token does", () => {
      const { chosen } = chatA();
      const token = store.startToken('a', chosen);
      assert.match(token, /^a\.\d{8}T\d{9}Z-[0-9a-f]{6}\.[0-9a-z]{1,10}\.[0-9a-f]{20}$/);
      assert.deepEqual(store.readStartToken(token), { origin: { chat: 'a', run: chosen } });
      assert.deepEqual(store.readStartToken(`  ${token}\n`), { origin: { chat: 'a', run: chosen } });
      // Another store's key, another chat or time under this tag, a tag changed, and what is not a token.
      const other = new ArtifactStore(path.join(root, 'other'));
      const [, , made, tag] = token.split('.');
      for (const forged of [
        other.startToken('a', chosen),
        `b.${chosen}.${made}.${tag}`,
        `a.${chosen}.${(parseInt(made!, 36) + 1).toString(36)}.${tag}`,
        `a.${chosen}.${made}.${tag!.replace(/.$/, (c) => (c === '0' ? '1' : '0'))}`,
        `a.${chosen}.${tag}`,
        `../a.${chosen}.${made}.${tag}`,
        '',
      ]) {
        assert.deepEqual(store.readStartToken(forged), { refused: 'unknown' }, forged);
        assert.equal(store.takeStartToken(forged, 'b'), false, forged);
      }
    });

    it('is good for 15 minutes after it was made, not the hour a token left in a chat would be read in: past that it is expired, and cannot be taken', () => {
      let now = Date.UTC(2026, 0, 1);
      const timed = new ArtifactStore(root, { now: () => now });
      const { chosen } = chatA();
      const token = timed.startToken('a', chosen);
      assert.equal(START_TOKEN_MS, 15 * 60 * 1000);
      now += START_TOKEN_MS;
      assert.deepEqual(timed.readStartToken(token), { origin: { chat: 'a', run: chosen } });
      now += 1000;
      assert.deepEqual(timed.readStartToken(token), { refused: 'expired' });
      assert.equal(timed.takeStartToken(token, 'b'), false);
      now = Date.UTC(2026, 0, 1) + 60 * 60 * 1000;
      assert.deepEqual(timed.readStartToken(token), { refused: 'expired' });
    });

    it('starts one chat, once: the chat that takes it holds it, in every window of the store, until it gives it back', () => {
      let now = Date.UTC(2026, 0, 1);
      const timed = new ArtifactStore(root, { now: () => now });
      const { chosen } = chatA();
      const token = timed.startToken('a', chosen);
      assert.equal(timed.takeStartToken(token, 'b'), true);
      // Another chat, in this window or another one on the same store.
      const window2 = new ArtifactStore(root, { now: () => now });
      assert.equal(timed.takeStartToken(token, 'c'), false);
      assert.equal(window2.takeStartToken(token, 'c'), false);
      assert.equal(timed.takeStartToken(token, 'b'), false);
      assert.deepEqual(window2.readStartToken(token), { refused: 'used', by: 'b' });
      // Given back by a chat that did not take it: nothing changes.
      timed.giveBackStartToken(token, 'c');
      assert.deepEqual(timed.readStartToken(token), { refused: 'used', by: 'b' });
      // Given back by the chat that took it (its start was interrupted): takeable again, once.
      timed.giveBackStartToken(token, 'b');
      assert.deepEqual(timed.readStartToken(token), { origin: { chat: 'a', run: chosen } });
      assert.equal(window2.takeStartToken(token, 'c'), true);
      assert.deepEqual(timed.readStartToken(token), { refused: 'used', by: 'c' });
      // The record of a taken token goes once the token is past its time, when another is taken.
      const taken = path.join(root, '.start-tokens');
      assert.equal(fs.readdirSync(taken).length, 1);
      now += START_TOKEN_MS + 1000;
      assert.equal(timed.takeStartToken(timed.startToken('a', chosen), 'd'), true);
      assert.equal(fs.readdirSync(taken).length, 1);
      // The store's listing passes the record by.
      return timed.listSessions().then((sessions) => assert.deepEqual(sessions.map((x) => x.sessionDigest), ['a']));
    });

    it('is refused by a store that has no key yet, which does not make one', () => {
      const fresh = new ArtifactStore(path.join(root, 'fresh'));
      assert.deepEqual(fresh.readStartToken(`a.20260101T000000000Z-abcdef.t0.${'0'.repeat(20)}`), { refused: 'unknown' });
      assert.equal(fs.existsSync(path.join(root, 'fresh', '.state-key')), false);
    });
  });

  describe("the new chat's chain", () => {
    it("goes on in the other chat's runs up to the chosen one, and no further", async () => {
      const { first, chosen } = chatA();
      const forked = record('b', 'print(x)', { reset: false, kept: true, from: 'a2', now: 'b1', origin: { chat: 'a', run: chosen } });
      const runs = await store.stateRuns('b');
      assert.deepEqual(
        runs.map((r) => r.runId),
        [first, chosen, forked],
      );
      const chain = stateChain(runs);
      assert.deepEqual(chain.kind === 'ok' ? chain.runs.map((r) => r.program) : chain, ['x = 1', 'x += 10', 'print(x)']);
      // The other chat is unchanged.
      assert.deepEqual((await store.stateRuns('a')).map((r) => r.program), ['x = 1', 'x += 10', 'x = 999']);
    });

    it("keeps copies of the runs it re-ran: the other chat deleted, its chain still holds, and a copy changed on disk breaks it", async () => {
      const { chosen } = chatA();
      const forked = record('b', 'print(x)', { reset: false, kept: true, from: 'a2', now: 'b1', origin: { chat: 'a', run: chosen } });
      const before = await store.stateRuns('b');
      assert.deepEqual(fs.readdirSync(path.join(root, 'b', forked, 'origin')), ['0001.json', '0002.json']);
      assert.equal(await store.deleteSession('a'), 3);
      const fresh = new ArtifactStore(root);
      assert.deepEqual(await fresh.stateRuns('b'), before);
      const chain = stateChain(before);
      assert.deepEqual(chain.kind === 'ok' ? chain.runs.map((r) => r.program) : chain, ['x = 1', 'x += 10', 'print(x)']);

      const copy = path.join(root, 'b', forked, 'origin', '0002.json');
      fs.writeFileSync(copy, fs.readFileSync(copy, 'utf8').replace('x += 10', 'x += 1000'));
      assert.deepEqual(stateChain(await new ArtifactStore(root).stateRuns('b')), { kind: 'broken', why: 'changed' });
    });

    it("without copies, follows the other chat's records: a run gone there is a missing link, and an origin under a broken seal is not followed", async () => {
      const { chosen } = chatA();
      const forked = record('b', 'print(x)', { reset: false, kept: true, from: 'a2', now: 'b1', origin: { chat: 'a', run: chosen } });
      await store.stateRuns('b');
      fs.rmSync(path.join(root, 'b', forked, 'origin'), { recursive: true });
      assert.deepEqual(
        (await store.stateRuns('b')).map((r) => r.program),
        ['x = 1', 'x += 10', 'print(x)'],
      );
      await store.deleteRun('a', chosen);
      assert.deepEqual(stateChain(await store.stateRuns('b')), { kind: 'broken', why: 'missing' });

      // The record edited on disk to point at another run of chat "a" that leaves the state it names.
      const other = record('a', 'x = 5', { reset: false, kept: true, from: '', now: 'a2' });
      const file = path.join(root, 'b', forked, 'run.json');
      const edited = JSON.parse(fs.readFileSync(file, 'utf8')) as RunRecord;
      edited.state!.origin = { chat: 'a', run: other };
      fs.writeFileSync(file, JSON.stringify(edited));
      assert.deepEqual(
        (await new ArtifactStore(root).stateRuns('b')).map((r) => [r.program, r.sealed]),
        [['print(x)', false]],
      );
    });
    it('reads each chat once, and a chat that started from itself is a missing link, not a walk without end', async () => {
      record('b', 'x = 0', { reset: false, kept: true, from: '', now: 'b0' });
      const first = (await store.stateRuns('b'))[0]!.runId;
      // Twelve starts of chat b from its own first run, their copies gone: a walk per origin would be 12^16 reads.
      const starts: string[] = [];
      for (let i = 0; i < 12; i++) starts.push(record('b', `print(${i})`, { reset: false, kept: true, from: 'b0', now: `b${i + 1}`, origin: { chat: 'b', run: first } }));
      await store.stateRuns('b');
      for (const run of starts) fs.rmSync(path.join(root, 'b', run, 'origin'), { recursive: true, force: true });
      const runs = await new ArtifactStore(root).stateRuns('b');
      assert.equal(runs.length, 13 + 12 * 1);
      assert.deepEqual(runs.slice(0, 3).map((r) => [r.program, r.otherChat ?? false]), [['x = 0', false], ['x = 0', true], ['print(0)', false]]);
    });

    it("never waits on a FIFO among the copies, and copies that do not end at the run started from are not taken", async () => {
      const { chosen, third } = chatA();
      const forked = record('b', 'print(x)', { reset: false, kept: true, from: 'a2', now: 'b1', origin: { chat: 'a', run: chosen } });
      await store.stateRuns('b');
      const origin = path.join(root, 'b', forked, 'origin');
      const programs = async () => (await new ArtifactStore(root).stateRuns('b')).map((r) => r.program);

      // A copy of a later run of chat "a" put last: not the run the record names, so chat a's records are read.
      fs.copyFileSync(path.join(root, 'a', third, 'run.json'), path.join(origin, '0003.json'));
      assert.deepEqual(await programs(), ['x = 1', 'x += 10', 'print(x)']);
      fs.rmSync(path.join(origin, '0003.json'));
      await store.deleteSession('a');
      assert.deepEqual(await programs(), ['x = 1', 'x += 10', 'print(x)']);

      fs.rmSync(path.join(origin, '0002.json'));
      execFileSync('mkfifo', [path.join(origin, '0002.json')]);
      assert.deepEqual(await programs(), ['print(x)']);
    });
  });

  describe('the call', () => {
    const call = async (sandbox: Sandbox, states: SessionStates, origin: { chat: string; run: string } | undefined, code = 'print(x)') => {
      const resume: ResumeSource = { runs: () => store.stateRuns('b'), chatRuns: (chat) => store.stateRuns(chat), files: async () => [] };
      const report = await executeCode(
        { acquire: async () => sandbox },
        silentLogger,
        { code, sessionKey: 'b', state: { reset: false, states, resume, ...(origin ? { rewind: { startFrom: origin } } : {}) } },
        limits,
      );
      record('b', code, report.state!, report.workDir);
      return report;
    };

    it("re-runs the other chat's kept runs up to the chosen one in a new sandbox, says so, and records where it started", async () => {
      const { chosen } = chatA();
      const { sandbox, ran, renewed } = fakeSandbox();
      const states = new SessionStates();
      const report = await call(sandbox, states, { chat: 'a', run: chosen });
      assert.deepEqual(ran, ['x = 1 @ /sandbox/runs/0001-aaaaaa', 'x += 10 @ /sandbox/runs/0002-aaaaaa', 'print(x)']);
      assert.equal(renewed(), 1);
      assert.deepEqual(report.state, { reset: false, kept: true, from: 'a2', now: 's3', origin: { chat: 'a', run: chosen } });
      assert.equal(
        report.text.replace(/\(\d+\.\d s\)/, '(<s> s)'),
        "The program ran and printed nothing. Only what the program prints comes back: end it with print(...) of everything you need to see.\n\n" +
          "State: started from the state another chat had after one of its runs, as the user asked in the CodeAct Sandbox view, in a new sandbox, by re-running that chat's 2 kept runs in order (<s> s). " +
          'Values computed from time, randomness, the network or workspace files that changed since may differ from that chat; files those runs wrote were written again. Later calls of this chat do not change the other chat.\n\n' +
          'State: kept for the next call.',
      );
      // The next call carries on; the chat's chain now runs through the other chat's records.
      await call(sandbox, states, undefined, 'y = x');
      const chain = stateChain(await store.stateRuns('b'));
      assert.deepEqual(chain.kind === 'ok' ? chain.runs.map((r) => r.program) : chain, ['x = 1', 'x += 10', 'print(x)', 'y = x']);
    });

    it('is refused before anything runs: a second time in the same chat, a run no longer recorded, a chain that cannot be re-run', async () => {
      const { chosen, third } = chatA();
      const { sandbox, ran, renewed } = fakeSandbox();
      await call(sandbox, new SessionStates(), { chat: 'a', run: chosen });
      ran.length = 0;
      await assert.rejects(call(sandbox, new SessionStates(), { chat: 'a', run: chosen }), {
        code: 'invalid_input',
        message: 'This chat already started from that state on an earlier call, and its state carried on from there. Call execute_code without `startFrom`.',
      });
      await store.deleteRun('a', third);
      await assert.rejects(call(sandbox, new SessionStates(), { chat: 'a', run: third }), {
        code: 'invalid_input',
        message:
          'The run the user chose to start from is no longer recorded (its chat was deleted, or it was removed to keep within the storage budget). Call execute_code without `startFrom` (the chat starts from an empty state), and tell the user.',
      });
      const orphan = record('c', 'z = 1', { reset: false, kept: true, from: 'gone', now: 'c1' });
      await assert.rejects(call(sandbox, new SessionStates(), { chat: 'c', run: orphan }), {
        code: 'invalid_input',
        message:
          'This chat cannot start from the state the user chose, because its kept runs cannot be re-run: the record of one of them is missing (deleted, or removed to keep within the storage budget). Call execute_code without `startFrom`, and tell the user.',
      });
      assert.deepEqual([ran, renewed()], [[], 1]);
    });

    it("takes a token for a run the chat's chain came through in another chat: only this chat's own starts count as taken", async () => {
      const z = record('z', 'x = 1', { reset: false, kept: true, from: '', now: 'z1' }, '/sandbox/runs/0001-zzzzzz');
      record('a', 'x += 10', { reset: false, kept: true, from: 'z1', now: 'a1', origin: { chat: 'z', run: z } }, '/sandbox/runs/0001-aaaaaa');
      const a = (await store.stateRuns('a')).at(-1)!.runId;
      record('b', 'y = x', { reset: false, kept: true, from: 'a1', now: 'b1', origin: { chat: 'a', run: a } });
      const { sandbox, ran } = fakeSandbox();
      await call(sandbox, new SessionStates(), { chat: 'z', run: z });
      assert.deepEqual(ran, ['x = 1 @ /sandbox/runs/0001-zzzzzz', 'print(x)']);
    });

    it("takes the user's token as the start begins, for one chat: another chat is refused before anything runs, an interrupted start gives it back", async () => {
      const { chosen } = chatA();
      const token = store.startToken('a', chosen);
      const never: Sandbox = { ...fakeSandbox().sandbox, run: async () => assert.fail('nothing may run') };
      const callIn = (key: string, sandbox: Sandbox) => {
        const recording = new RunRecording(store, key);
        return executeToolCall({ acquire: async () => sandbox }, silentLogger, { code: 'print(x)', startFrom: token }, {
          sessionKey: key,
          limits,
          memoryMb: 512,
          filesIn: { source: undefined, caps: {} as never },
          filesOut: { mode: 'declared', caps: {} as never, savedWhere: 'here' },
          record: recording.record,
          states: new SessionStates(),
          stateRuns: recording.stateRuns,
          otherChats: otherChats(store),
        });
      };
      // The sandbox stops under the first re-run: the chat did not start from the state, and may call again.
      const broken = fakeSandbox().sandbox;
      const failing: Sandbox = { ...broken, run: async (run) => (run.workDir ? Promise.reject(new Error('the sandbox is gone')) : broken.run(run)) };
      await assert.rejects(callIn('chat:b', failing), { code: 'sandbox_failed' });
      assert.deepEqual(store.readStartToken(token), { origin: { chat: 'a', run: chosen } });

      const { sandbox, ran } = fakeSandbox();
      await callIn('chat:b', sandbox);
      assert.deepEqual(ran, ['x = 1 @ /sandbox/runs/0001-aaaaaa', 'x += 10 @ /sandbox/runs/0002-aaaaaa', 'print(x)']);
      assert.deepEqual(store.readStartToken(token), { refused: 'used', by: sessionDigest('chat:b') });
      // The token left in chat b's history, passed by another chat: refused, nothing run, nothing renewed.
      await assert.rejects(callIn('chat:c', never), {
        code: 'invalid_input',
        message: '`startFrom` was used by another chat already: a token starts one chat, once. Call execute_code without `startFrom`, or ask the user to choose Start a New Chat from Here on the run again.',
      });
      await assert.rejects(callIn('chat:b', never), {
        code: 'invalid_input',
        message: 'This chat already started from that state on an earlier call, and its state carried on from there. Call execute_code without `startFrom`.',
      });
    });

    it("a failing re-run ends in a partial state that still names where the chat started, so its chain goes on there", async () => {
      const first = record('a', 'x = 1', { reset: false, kept: true, from: '', now: 'a1' }, '/sandbox/runs/0001-aaaaaa');
      const chosen = record('a', 'raise ValueError', { reset: false, kept: true, from: 'a1', now: 'a2' }, '/sandbox/runs/0002-aaaaaa');
      const { sandbox } = fakeSandbox();
      const report = await call(sandbox, new SessionStates(), { chat: 'a', run: chosen });
      assert.match(report.text, /State: partly restored\. Starting from the state another chat had after one of its runs, as the user asked, re-running that chat's kept run 2 of 2 failed \(exit code 1[^)]*\), so this call started from the state after run 1\./);
      assert.deepEqual(report.state, { reset: false, kept: true, from: 'a1', now: 's2', origin: { chat: 'a', run: chosen } });
      const chain = stateChain(await store.stateRuns('b'));
      assert.deepEqual(chain.kind === 'ok' ? chain.runs.map((r) => r.runId) : chain, [first, (await store.stateRuns('b')).at(-1)!.runId]);
    });
  });

  describe('the input', () => {
    const options = (extra: Partial<ToolCallOptions>): ToolCallOptions => ({
      sessionKey: 'b',
      limits,
      memoryMb: 512,
      filesIn: { source: undefined, caps: {} as never },
      filesOut: { mode: 'declared', caps: {} as never, savedWhere: 'here' },
      ...extra,
    });
    const other: NonNullable<ToolCallOptions['otherChats']> = {
      readToken: (t: string) =>
        t === 'good' ? { origin: { chat: 'a', run: 'r' } } : t === 'old' ? { refused: 'expired' } : t === 'taken' ? { refused: 'used', by: 'someone' } : t === 'mine' ? { refused: 'used', by: sessionDigest('b') } : { refused: 'unknown' },
      takeToken: () => assert.fail('no token may be taken'),
      giveBackToken: () => assert.fail('no token may be given back'),
      runs: async () => [] as StateRun[],
    };
    const never = { acquire: async () => assert.fail('no sandbox may be asked for') };

    it('is refused with a sentence the model can act on: with reset or rewind, without session state, on a host without it, a token not made here', async () => {
      const session = { states: new SessionStates(), stateRuns: async () => [] as StateRun[] };
      const cases: [Record<string, unknown>, Partial<ToolCallOptions>, string][] = [
        [{ startFrom: 'good', reset: true }, { ...session, otherChats: other }, '`startFrom` starts this chat from the state the user chose: pass it without `reset` or `rewind`.'],
        [{ startFrom: 'good', rewind: 1 }, { ...session, otherChats: other }, '`startFrom` starts this chat from the state the user chose: pass it without `reset` or `rewind`.'],
        [
          { startFrom: 'good' },
          {},
          "The user has not turned on session state, so this chat cannot start from another chat's state. Call execute_code without `startFrom`, and tell the user that starting from another chat's state needs the codeactSandbox.state setting at session.",
        ],
        [{ startFrom: 'good' }, session, "This host cannot start a chat from another chat's state. Call execute_code without `startFrom`."],
        [
          { startFrom: 'old' },
          { ...session, otherChats: other },
          '`startFrom` has expired: a token is good for 15 minutes after the user chose the run. Call execute_code without `startFrom`, or ask the user to choose Start a New Chat from Here on the run again.',
        ],
        [
          { startFrom: 'taken' },
          { ...session, otherChats: other },
          '`startFrom` was used by another chat already: a token starts one chat, once. Call execute_code without `startFrom`, or ask the user to choose Start a New Chat from Here on the run again.',
        ],
        [
          { startFrom: 'mine' },
          { ...session, otherChats: other },
          'This chat already started from that state on an earlier call, and its state carried on from there. Call execute_code without `startFrom`.',
        ],
        [
          { startFrom: 'a.b.c' },
          { ...session, otherChats: other },
          "`startFrom` is not a state the user offered: it must be the token from the user's message, copied exactly. Call execute_code without `startFrom`, or ask the user to choose Start a New Chat from Here on the run again.",
        ],
      ];
      for (const [input, extra, message] of cases) {
        await assert.rejects(executeToolCall(never, silentLogger, { code: 'print(1)', ...input }, options(extra)), { code: 'invalid_input', message }, JSON.stringify(input));
      }
    });
  });

  it('a start from an empty state is told as such', () => {
    assert.equal(
      resumeSentence({ kind: 'started', origin: { chat: 'a', run: 'r' }, runs: 0, ms: 0, now: '', recorded: '', notes: [] }),
      'State: started from the state another chat had after one of its runs, as the user asked in the CodeAct Sandbox view, in a new sandbox: that state was empty.',
    );
  });
});
