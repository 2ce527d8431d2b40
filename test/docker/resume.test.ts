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
import { IMAGE, dockerCli, testSpec, uniqueSessionKey, useDocker } from './helpers';

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

  it('keeps the packages a chat installed as its image: its next sandbox has them without installing, says so, and they go with the chat', async function () {
    // The records of this test's chats: this chat has some until the end.
    const records = { store: 'resume-test', exists: () => Promise.resolve(true) };
    const first = sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords: records } });
    const h = host(root);
    const key = uniqueSessionKey('chat-image');
    const digest = sessionDigest(key);
    // The image carries no test label: it goes with the chat, also when the test fails.
    this.test?.parent?.afterAll(() => first.forgetChat(digest));
    // What `pip install tinypkg` leaves in the user site (no index here), and like pip only when missing.
    const install = [
      'import importlib.util, os, site',
      "if importlib.util.find_spec('tinypkg') is None:",
      '    d = site.getusersitepackages()',
      "    os.makedirs(d + '/tinypkg', exist_ok=True)",
      "    os.makedirs(d + '/tinypkg-1.0.dist-info', exist_ok=True)",
      "    open(d + '/tinypkg/__init__.py', 'w').write('VALUE = 7')",
      "    open(d + '/tinypkg-1.0.dist-info/METADATA', 'w').write('Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 1.0\\n')",
      // A hostile chat's bid for the runner (PID 1), which would read them if it started with them on its path.
      "    for name in ('evil.pth', 'usercustomize.py', 'sitecustomize.py'):",
      "        open(d + '/' + name, 'w').write(\"import os; open('/sandbox/ran-%d' % os.getpid(), 'w').close()\\n\")",
      "    print('installed')",
    ].join('\n');
    assert.equal(await call(first, h, key, install), `stdout:\ninstalled\n\n${KEPT}`);
    // Taken after the call, off its way: the test waits for it to end.
    await first.chatImages!.settled(digest);
    const tag = `codeact-sandbox/chat-packages:${digest.slice(0, 16)}`;
    const labels = JSON.parse(await dockerCli('image', 'inspect', '--format', '{{json .Config.Labels}}', tag)) as Record<string, string>;
    assert.equal(labels['dev.codeact-sandbox.chat.distributions'], '["tinypkg 1.0"]');
    await removeSandbox(first, key);
    // As after a restart of VS Code: another process finds the chat's image on the engine.
    const provider = sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords: records } });

    const check = [
      'import os, tinypkg, importlib.metadata',
      "print(tinypkg.VALUE, tinypkg.__file__, importlib.metadata.version('tinypkg'))",
      "print('PID 1 ran them:', os.path.exists('/sandbox/ran-1'), '| a program did:', any(f.startswith('ran-') for f in os.listdir('/sandbox')))",
    ].join('\n');
    assert.equal(
      await call(provider, h, key, check),
      "stdout:\n7 /opt/codeact-sandbox/chat-site/tinypkg/__init__.py 1.0\nPID 1 ran them: False | a program did: True\n\nThis chat's sandbox was made again from its prepared image, which has the Python packages installed earlier in this chat (tinypkg 1.0): " +
        `they were not installed again, and pip finds them installed.\n\n${RESTORED(1)}\n\n${KEPT}`,
    );
    const imageId = async () => (await dockerCli('image', 'inspect', '--format', '{{.Id}}', tag)).trim();
    const made = await imageId();
    assert.equal((await dockerCli('inspect', '--format', '{{.Image}}', provider.active.get(key)!.id)).trim(), made);

    // Deleted with the chat, also while a sandbox still runs from it: no new sandbox is made from it.
    await provider.forgetChat(digest);
    await assert.rejects(dockerCli('image', 'inspect', tag));
    // The sandbox made from it runs on (a forced removal would take it along on Podman).
    assert.equal((await dockerCli('inspect', '--format', '{{.State.Running}}', provider.active.get(key)!.id)).trim(), 'true');
    await removeSandbox(provider, key);
    // Made from the configured image: the replayed install put the package in the user site again.
    const where = "import site, tinypkg\nprint(tinypkg.__file__.startswith(site.getusersitepackages() + '/'))";
    assert.equal(await call(provider, h, key, where), `stdout:\nTrue\n\n${RESTORED(2)}\n\n${KEPT}`);
    // The image lost its tag while that sandbox ran from it; with the sandbox gone, it is gone too.
    // What is left is the image the replayed install was kept in, after this call.
    await provider.chatImages!.settled(digest);
    const left = await dockerCli('images', '--no-trunc', '--quiet', '--filter', `label=dev.codeact-sandbox.chat.session=${digest}`);
    assert.equal(left, `${await imageId()}\n`);
    assert.notEqual(left, `${made}\n`);

    // A later process keeping other records (another workspace's window) leaves the image alone;
    // one of the same records, where the chat has none left (deleted while none ran), removes it.
    const later = async (store: string) => {
      const p = sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords: { store, exists: (s: string) => Promise.resolve(s !== digest) } } });
      assert.equal(await call(p, h, uniqueSessionKey('chat-image-later'), 'print(1)'), `stdout:\n1\n\n${KEPT}`);
      await p.chatImages!.settled(digest);
      return dockerCli('images', '--no-trunc', '--quiet', '--filter', `label=dev.codeact-sandbox.chat.session=${digest}`);
    };
    assert.equal(await later('another-window'), left);
    assert.equal(await later('resume-test'), '');
  });

  it("never reads a chat's user site through a link, and Delete All leaves another workspace's chat images", async function () {
    const records = (store: string) => ({ store, exists: () => Promise.resolve(true) });
    const provider = sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords: records('resume-test-a') } });
    const h = host(root);
    const images = (digest: string) => dockerCli('images', '--quiet', '--filter', `label=dev.codeact-sandbox.chat.session=${digest}`);
    const pkg = (name: string) => `os.makedirs(d + '/${name}-1.0.dist-info')\nopen(d + '/${name}-1.0.dist-info/METADATA', 'w').write('Metadata-Version: 2.1\\nName: ${name}\\nVersion: 1.0\\n')`;
    // ~/.local made a link elsewhere: the engine, reading as root, would follow it (to /root/.local as well).
    const linked = uniqueSessionKey('chat-image-link');
    const link = [
      'import os, site, tempfile',
      "away = tempfile.gettempdir() + '/elsewhere'",
      "d = away + '/' + site.getusersitepackages().split('/.local/')[1]",
      pkg('linkedpkg'),
      "os.symlink(away, os.path.expanduser('~/.local'))",
      "print(os.path.isdir(site.getusersitepackages()))",
    ].join('\n');
    assert.equal(await call(provider, h, linked, link), `stdout:\nTrue\n\n${KEPT}`);
    await provider.chatImages!.settled(sessionDigest(linked));
    assert.equal(await images(sessionDigest(linked)), '');

    const chat = uniqueSessionKey('chat-image-all');
    const digest = sessionDigest(chat);
    this.test?.parent?.afterAll(() => provider.forgetChat(digest));
    assert.equal(await call(provider, h, chat, `import os, site\nd = site.getusersitepackages()\n${pkg('allpkg')}`), QUIET_KEPT);
    await provider.chatImages!.settled(digest);
    const made = await images(digest);
    assert.match(made, /^[0-9a-f]{12}\n$/);
    // Another workspace's window deletes all of its chats: this one's image stays.
    await sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords: records('resume-test-b') } }).forgetChat(undefined);
    assert.equal(await images(digest), made);
    await provider.forgetChat(undefined);
    assert.equal(await images(digest), '');
  });

  it("stacks a chat's image at most its limit of builds, and keeps no more bytes than its limit, a sparse file counted whole", async function () {
    const provider = sandboxes.makeProvider({ options: { keepChatImages: true, chatImageLimits: { bytes: 4 * 1024 * 1024, generations: 2 } } });
    const h = host(root);
    const chat = uniqueSessionKey('chat-image-stack');
    const digest = sessionDigest(chat);
    this.test?.parent?.afterAll(() => provider.forgetChat(digest));
    const labels = async (session: string) => {
      const found = await dockerCli('images', '--quiet', '--filter', `label=dev.codeact-sandbox.chat.session=${session}`);
      if (!found) return 'none';
      const l = JSON.parse(await dockerCli('image', 'inspect', '--format', '{{json .Config.Labels}}', found.trim())) as Record<string, string>;
      return `${l['dev.codeact-sandbox.chat.generation']} ${l['dev.codeact-sandbox.chat.distributions']}`;
    };
    // Like pip: only when the distribution is not installed yet (a re-run finds it in the chat's image).
    const install = (name: string) =>
      [
        'import importlib.metadata, os, site',
        'try:',
        `    importlib.metadata.version('${name}')`,
        'except importlib.metadata.PackageNotFoundError:',
        `    d = site.getusersitepackages() + '/${name}-1.0.dist-info'`,
        '    os.makedirs(d)',
        `    open(d + '/METADATA', 'w').write('Metadata-Version: 2.1\\nName: ${name}\\nVersion: 1.0\\n')`,
      ].join('\n');
    const step = async (name: string) => {
      await call(provider, h, chat, install(name));
      await provider.chatImages!.settled(digest);
      const l = await labels(digest);
      await removeSandbox(provider, chat);
      return l;
    };
    assert.equal(await step('gen1pkg'), '1 ["gen1pkg 1.0"]');
    assert.equal(await step('gen2pkg'), '2 ["gen1pkg 1.0","gen2pkg 1.0"]');
    // A third build would stack past the limit: the image stays as it was.
    assert.equal(await step('gen3pkg'), '2 ["gen1pkg 1.0","gen2pkg 1.0"]');

    const sparse = uniqueSessionKey('chat-image-sparse');
    this.test?.parent?.afterAll(() => provider.forgetChat(sessionDigest(sparse)));
    const big = "import os, site\nd = site.getusersitepackages()\nos.makedirs(d)\nwith open(d + '/big.bin', 'wb') as f:\n    f.truncate(5 * 1024 * 1024)";
    assert.equal(await call(provider, h, sparse, big), QUIET_KEPT);
    await provider.chatImages!.settled(sessionDigest(sparse));
    assert.equal(await labels(sessionDigest(sparse)), 'none');
  });

  it("names as a chat image's base the image its sandbox was made from, also when the setting's name has moved since", async function () {
    // The setting's name, moved by a pull while the chat's sandbox runs.
    const moved = `codeact-sandbox/resume-moved:${Date.now().toString(36)}`;
    const idOf = async (image: string) => (await dockerCli('image', 'inspect', '--format', '{{.Id}}', image)).trim();
    await dockerCli('tag', IMAGE, moved);
    this.test?.parent?.afterAll(() => dockerCli('rmi', moved).catch(() => ''));
    const provider = sandboxes.makeProvider({ spec: () => testSpec({ image: moved }), options: { keepChatImages: true } });
    const h = host(root);
    const chat = uniqueSessionKey('chat-image-moved');
    const digest = sessionDigest(chat);
    this.test?.parent?.afterAll(() => provider.forgetChat(digest));
    assert.equal(await call(provider, h, chat, 'print(1)'), `stdout:\n1\n\n${KEPT}`);
    const madeFrom = await idOf(moved);
    await dockerCli('tag', 'codeact-sandbox/python-pip:bookworm', moved);
    assert.notEqual(await idOf(moved), madeFrom);
    const write = "import os, site\nd = site.getusersitepackages() + '/movedpkg-1.0.dist-info'\nos.makedirs(d)\nopen(d + '/METADATA', 'w').write('Metadata-Version: 2.1\\nName: movedpkg\\nVersion: 1.0\\n')";
    assert.equal(await call(provider, h, chat, write), QUIET_KEPT);
    await provider.chatImages!.settled(digest);
    const base = await dockerCli('image', 'inspect', '--format', '{{index .Config.Labels "dev.codeact-sandbox.chat.base"}}', `codeact-sandbox/chat-packages:${digest}`);
    assert.equal(base.trim(), madeFrom);
  });
});
