import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { NOTHING_PRINTED } from '../../src/core/format';
import { sessionDigest } from '../../src/core/session';
import { STATE_LINES, SessionStates } from '../../src/core/state';
import type { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { ArtifactStore, pruneAfterCall } from '../../src/storage/artifactStore';
import { RunRecording } from '../../src/storage/runRecorder';
import { sessionCall, sessionHost as host, type SessionHost } from './fixtures/sessionHost';
import { dockerCli, uniqueSessionKey, useDocker } from './helpers';

const KEPT = STATE_LINES.kept;
const QUIET_KEPT = `${NOTHING_PRINTED}\n\n${KEPT}`;
const RESTORED = (runs: number) =>
  `State: restored before this call by re-running this chat's ${runs} kept run${runs === 1 ? '' : 's'} in order (<s> s), because its sandbox had been removed. ` +
  'Values computed from time, randomness, the network or workspace files that changed since may differ from before; files those runs wrote were written again.';
/** The replay's duration is the one figure that varies. */
const seconds = (text: string) => text.replace(/in order \(\d+\.\d s\)/, 'in order (<s> s)');
const DIFFER = 'Values computed from time, randomness, the network or workspace files that changed since may differ from before.';

/** One session-mode call's text, its replay's duration made constant. */
async function call(provider: DockerSandboxProvider, h: SessionHost, sessionKey: string, code: string, options: Parameters<typeof sessionCall>[4] = {}): Promise<string> {
  return seconds((await sessionCall(provider, h, sessionKey, code, options)).text);
}

describe('session state survives its sandbox: resume by replay (integration)', function () {
  const sandboxes = useDocker();
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-resume-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  async function removeSandbox(provider: DockerSandboxProvider, key: string): Promise<string> {
    const id = provider.active.get(key)!.id;
    await dockerCli('rm', '-f', id);
    return id;
  }

  it("brings back a removed sandbox's variables, files and directories at the next call, and says how, again after a second removal", async function () {
    const provider = sandboxes.makeProvider();
    const h = host(root);
    const key = uniqueSessionKey('resume');
    assert.equal(await call(provider, h, key, "import os\nhome = os.getcwd()\nx = 41\nopen('data.txt', 'w').write('hello')"), QUIET_KEPT);
    assert.equal(await call(provider, h, key, 'x += 1'), QUIET_KEPT);
    const first = await removeSandbox(provider, key);

    const back = "print(x, open(home + '/data.txt').read(), os.getcwd() != home)";
    assert.equal(await call(provider, h, key, back), `stdout:\n42 hello True\n\n${RESTORED(2)}\n\n${KEPT}`);
    assert.notEqual(provider.active.get(key)!.id, first);
    // The rebuilt state is the chat's own: no word of a loss, nothing replayed again.
    assert.equal(await call(provider, h, key, 'x += 100\nprint(x)'), `stdout:\n142\n\n${KEPT}`);

    // The calls made on the rebuilt state link to the chain as well.
    await removeSandbox(provider, key);
    assert.equal(await call(provider, h, key, 'print(x)'), `stdout:\n142\n\n${RESTORED(4)}\n\n${KEPT}`);
  });

  it("says, without asking the engine, whether a chat's sandbox may hold its state: none before its first call or after it is removed, a new one holds none until a call keeps one", async function () {
    const provider = sandboxes.makeProvider();
    const h = host(root);
    const key = uniqueSessionKey('holds');
    assert.equal(provider.sessionSandbox(key), undefined);
    // A sandbox made for the chat, no program run in it yet.
    const lease = await provider.acquire(key, new AbortController().signal);
    await lease.release?.();
    assert.deepEqual(provider.sessionSandbox(key), { id: provider.active.get(key)!.id, mayHoldState: false });
    assert.equal(await call(provider, h, key, 'x = 1'), QUIET_KEPT);
    assert.deepEqual(provider.sessionSandbox(key), { id: provider.active.get(key)!.id, mayHoldState: true });
    await provider.release(key);
    assert.equal(provider.sessionSandbox(key), undefined);
    // What the question then names is what the call does: the chat's one kept run runs again.
    assert.equal(await call(provider, h, key, 'print(x)'), `stdout:\n1\n\n${RESTORED(1)}\n\n${KEPT}`);
  });

  it('a replayed run that fails now is named, and the call starts from the state before it', async function () {
    const provider = sandboxes.makeProvider();
    const h = host(root);
    const key = uniqueSessionKey('resume-fails');
    fs.writeFileSync(path.join(h.workspace, 'n.txt'), '5');
    assert.equal(await call(provider, h, key, "n = int(open('n.txt').read())", { files: ['n.txt'] }), QUIET_KEPT);
    assert.equal(await call(provider, h, key, 'm = n * 2'), QUIET_KEPT);
    fs.writeFileSync(path.join(h.workspace, 'n.txt'), 'five');
    await removeSandbox(provider, key);

    assert.equal(
      await call(provider, h, key, "print('n' in globals(), 'm' in globals())"),
      "stdout:\nFalse False\n\nState: partly restored. This chat's sandbox had been removed; re-running its kept run 1 of 2 failed " +
        "(exit code 1: ValueError: invalid literal for int() with base 10: 'five'), so this call started from an empty state. " +
        `Re-create what is missing, or start over with reset.\n\n${KEPT}`,
    );
  });

  it('a record changed on disk is refused and never run; the storage budget takes a state whole, and the next call starts from an empty state', async function () {
    const provider = sandboxes.makeProvider();
    const h = host(root);
    const key = uniqueSessionKey('resume-refused');
    assert.equal(await call(provider, h, key, "x = 'mine'"), QUIET_KEPT);
    assert.equal(await call(provider, h, key, "y = 'also'"), QUIET_KEPT);
    const [, older] = await h.store.listRuns(new RunRecording(h.store, key).writer.sessionDigest);
    const file = path.join(h.store.root, older!.sessionKeyDigest, older!.runId, 'run.json');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace("x = 'mine'", "open('/sandbox/home/ran', 'w').close()"));
    await removeSandbox(provider, key);

    // A restarted window reads the store again, and has no record of the chat's states.
    const restarted = { ...h, store: new ArtifactStore(h.store.root), states: new SessionStates() };
    const refused = (why: string) =>
      `stdout:\n[False, False]\n\nState: not restored. This chat's sandbox had been removed, and its kept runs were not re-run because ${why}; this call started from an empty state.\n\n${KEPT}`;
    const peek = "import os\nprint(['x' in globals(), os.path.exists('/sandbox/home/ran')])";
    assert.equal(await call(provider, restarted, key, peek), refused('the record of one of them was changed, or was not written for this chat'));

    // The budget takes a chat's state whole, never its first run alone: the call that pushed the
    // store over is told, and the next call starts from an empty state though its sandbox still holds one.
    const budget = host(path.join(root, 'budget'));
    const other = uniqueSessionKey('resume-budget');
    assert.equal(await call(provider, budget, other, "x = 'mine'"), QUIET_KEPT);
    assert.equal(await call(provider, budget, other, "y = 'also'"), QUIET_KEPT);
    const pruned = await pruneAfterCall(budget.store, { budgetBytes: (await budget.store.totalBytes()) - 1, sessionKey: other, states: budget.states });
    assert.deepEqual(
      [pruned.result.deletedRuns, pruned.model],
      [2, 'State: deleted after this call, with 2 stored runs of this chat and their files, to keep the stored runs within the storage budget; the next call starts from an empty state.'],
    );
    assert.equal(await call(provider, budget, other, peek), `stdout:\n[False, False]\n\n${STATE_LINES.dropped} ${KEPT}`);
    assert.equal(await call(provider, budget, other, "print('x' in globals())"), `stdout:\nFalse\n\n${KEPT}`);
  });

  it("goes back kept calls on the model's word or to a run the person chose, in a new sandbox, never further than the chat's kept calls", async function () {
    const provider = sandboxes.makeProvider();
    const h = host(root);
    const key = uniqueSessionKey('rewind');
    assert.equal(await call(provider, h, key, "import os\nhome = os.getcwd()\nx = 1\nopen('f.txt', 'w').write('one')"), QUIET_KEPT);
    assert.equal(await call(provider, h, key, "x = 2\nopen(home + '/f.txt', 'w').write('two')"), QUIET_KEPT);
    assert.equal(await call(provider, h, key, 'x = 3\nraise SystemExit(4)'), `exit code: 4\n\n${STATE_LINES.unchanged}`);
    const before = provider.active.get(key)!.id;

    const back = "print(x, open(home + '/f.txt').read())";
    assert.equal(
      await call(provider, h, key, back, { rewind: 1 }),
      `stdout:\n1 one\n\nState: went back 1 kept call before this call, in a new sandbox, by re-running this chat's 1 earlier kept run in order (<s> s). ${DIFFER}\n\n${KEPT}`,
    );
    assert.notEqual(provider.active.get(key)!.id, before);
    // The chain is now the first call and the one that went back.
    await assert.rejects(call(provider, h, key, 'print(x)', { rewind: 3 }), {
      code: 'invalid_input',
      message: "This chat's state holds 2 kept calls, so `rewind` can be at most 2. Call again with a smaller `rewind`, or with `reset`: true for an empty state.",
    });
    assert.equal(await call(provider, h, key, "print('x' in globals())", { rewind: 2 }), `stdout:\nFalse\n\nState: went back 2 kept calls before this call, in a new sandbox, to an empty state.\n\n${KEPT}`);

    // The person's choice in the view. The chat's first call is no longer what its state grew from.
    assert.equal(await call(provider, h, key, 'x = 7'), QUIET_KEPT);
    const runs = await h.store.stateRuns(new RunRecording(h.store, key).writer.sessionDigest);
    await assert.rejects(call(provider, h, key, 'print(x)', { rewindTo: runs[0]!.runId }), {
      code: 'invalid_input',
      message:
        "The user asked to go back to the state after an earlier run, but that run's state is no longer the one this chat's state grew from (it was not kept, or a reset or going back came after it). Call again: the call runs on the chat's current state.",
    });
    // The call that went back to an empty state is.
    assert.equal(
      await call(provider, h, key, "print('x' in globals())", { rewindTo: runs.at(-2)!.runId }),
      `stdout:\nFalse\n\nState: went back 1 kept call before this call, as the user asked in the CodeAct Sandbox view, in a new sandbox, by re-running this chat's 1 earlier kept run in order (<s> s). ${DIFFER}\n\n${KEPT}`,
    );

    // The model's `reset`, made without knowing of the person's choice, comes first: both are told.
    assert.equal(await call(provider, h, key, 'x = 8'), QUIET_KEPT);
    assert.equal(
      await call(provider, h, key, "print('x' in globals())", { reset: true, rewindTo: runs.at(-2)!.runId }),
      "stdout:\nFalse\n\nThe user had chosen, in the CodeAct Sandbox view, to go back to the state after an earlier run; this call's `reset` came first, so that was not done. " +
        `Tell the user, who can choose it again.\n\n${KEPT}`,
    );
  });

  it("starts a new chat from the state another chat had after a chosen run, in a sandbox of its own, leaving that chat as it was", async function () {
    const provider = sandboxes.makeProvider();
    const h = host(root);
    const a = uniqueSessionKey('fork-from');
    const b = uniqueSessionKey('fork-to');
    assert.equal(await call(provider, h, a, "import os\nhome = os.getcwd()\nx = 41\nopen('data.txt', 'w').write('hello')"), QUIET_KEPT);
    assert.equal(await call(provider, h, a, 'x += 1'), QUIET_KEPT);
    assert.equal(await call(provider, h, a, "x = 999\nopen(home + '/data.txt', 'w').write('changed')"), QUIET_KEPT);
    const chosen = (await h.store.listRuns(sessionDigest(a)))[1]!;
    assert.equal(chosen.program, 'x += 1');
    const token = h.store.startToken(sessionDigest(a), chosen.runId);

    const read = "print(x, open(home + '/data.txt').read())";
    assert.equal(
      await call(provider, h, b, read, { startFrom: token }),
      "stdout:\n42 hello\n\nState: started from the state another chat had after one of its runs, as the user asked in the CodeAct Sandbox view, in a new sandbox, by re-running that chat's 2 kept runs in order (<s> s). " +
        'Values computed from time, randomness, the network or workspace files that changed since may differ from that chat; files those runs wrote were written again. Later calls of this chat do not change the other chat.\n\n' +
        KEPT,
    );
    assert.notEqual(provider.active.get(b)!.id, provider.active.get(a)!.id);
    assert.equal(await call(provider, h, b, "x += 1\nopen(home + '/data.txt', 'w').write('from b')"), QUIET_KEPT);
    // The other chat goes on in its own sandbox, as it was.
    assert.equal(await call(provider, h, a, read), `stdout:\n999 changed\n\n${KEPT}`);
    await assert.rejects(call(provider, h, b, 'print(x)', { startFrom: token }), {
      code: 'invalid_input',
      message: 'This chat already started from that state on an earlier call, and its state carried on from there. Call execute_code without `startFrom`.',
    });
    // The token, left in chat b's history, in a third chat: it started one chat already.
    const c = uniqueSessionKey('fork-again');
    await assert.rejects(call(provider, h, c, 'print(x)', { startFrom: token }), {
      code: 'invalid_input',
      message: '`startFrom` was used by another chat already: a token starts one chat, once. Call execute_code without `startFrom`, or ask the user to choose Start a New Chat from Here on the run again.',
    });
    assert.equal(provider.active.get(c), undefined);

    // The new chat's sandbox removed: its state comes back through the other chat's records.
    await removeSandbox(provider, b);
    assert.equal(await call(provider, h, b, read), `stdout:\n43 from b\n\n${RESTORED(4)}\n\n${KEPT}`);
    // The other chat deleted: the new chat keeps copies of the runs it started from, and comes back all the same.
    assert.equal(await h.store.deleteSession(sessionDigest(a)), 4);
    await removeSandbox(provider, b);
    assert.equal(await call(provider, h, b, read), `stdout:\n43 from b\n\n${RESTORED(5)}\n\n${KEPT}`);
  });
});
