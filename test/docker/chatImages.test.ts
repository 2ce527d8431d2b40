import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { NOTHING_PRINTED } from '../../src/core/format';
import { sessionDigest } from '../../src/core/session';
import { STATE_LINES } from '../../src/core/state';
import { systemClock } from '../../src/core/clock';
import { buildChatImage, configuredBase } from '../../src/docker/images/chatImage';
import type { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { sessionCall, sessionHost as host, type SessionHost } from './fixtures/sessionHost';
import { IMAGE, TEST_VERSION, byRuntime, docker, dockerCli, log, testSpec, uniqueSessionKey, useDocker } from './helpers';

const KEPT = STATE_LINES.kept;
const QUIET_KEPT = `${NOTHING_PRINTED}\n\n${KEPT}`;
const RESTORED = (runs: number) =>
  `State: restored before this call by re-running this chat's ${runs} kept run${runs === 1 ? '' : 's'} in order (<s> s), because its sandbox had been removed. ` +
  'Values computed from time, randomness, the network or workspace files that changed since may differ from before; files those runs wrote were written again.';
const PREPARED = (names: string) =>
  `This chat's sandbox was made again from its prepared image, which has the Python packages installed earlier in this chat (${names}): they were not installed again, and pip finds them installed.`;
const PIP_IMAGE = 'codeact-sandbox/python-pip:bookworm';
const DAY = 24 * 60 * 60 * 1000;

/** One session-mode call's text, its replay's duration made constant. */
async function call(provider: DockerSandboxProvider, h: SessionHost, sessionKey: string, code: string): Promise<string> {
  return (await sessionCall(provider, h, sessionKey, code)).text.replace(/in order \(\d+\.\d s\)/, 'in order (<s> s)');
}

/**
 * What pip leaves for a distribution it installed (no index here), and like pip only when it is
 * not installed yet: its files, a dist-info, and a RECORD that lists them all.
 */
function distribution(name: string, files: Record<string, string> = {}): string {
  const all = { ...files, [`${name}-1.0.dist-info/METADATA`]: `Metadata-Version: 2.1\nName: ${name}\nVersion: 1.0\n` };
  return [
    'import importlib.metadata as _md, os as _os, site as _site',
    'try:',
    `    _md.version(${JSON.stringify(name)})`,
    'except _md.PackageNotFoundError:',
    '    _d = _site.getusersitepackages()',
    `    for _rel, _text in ${JSON.stringify(all)}.items():`,
    "        _os.makedirs(_os.path.dirname(_d + '/' + _rel), exist_ok=True)",
    "        open(_d + '/' + _rel, 'w').write(_text)",
    `    open(_d + '/${name}-1.0.dist-info/RECORD', 'w').write(''.join(r + ',,\\n' for r in ${JSON.stringify(Object.keys(all))}) + '${name}-1.0.dist-info/RECORD,,\\n')`,
  ].join('\n');
}

/** The files of the chat's packages in a sandbox made from its image. */
const LIST_CHAT_SITE = [
  'import os',
  "top = '/opt/codeact-sandbox/chat-site'",
  'for d, _, fs in sorted(os.walk(top)):',
  '    for f in sorted(fs):',
  "        print(os.path.relpath(os.path.join(d, f), top), os.path.getsize(os.path.join(d, f)))",
].join('\n');

describe('a chat prepared image: what it keeps, and how long (integration)', function () {
  const sandboxes = useDocker();
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-chat-images-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  async function removeSandbox(provider: DockerSandboxProvider, key: string): Promise<void> {
    await dockerCli('rm', '-f', provider.active.get(key)!.id);
  }
  /** The ids of the images the engine keeps for a chat (by its label, whatever their name). */
  const imagesOf = async (digest: string) => (await dockerCli('images', '--no-trunc', '--quiet', '--filter', `label=dev.codeact-sandbox.chat.session=${digest}`)).trim();
  const labelOf = async (digest: string, label: string) => {
    const id = await imagesOf(digest);
    return id ? (JSON.parse(await dockerCli('image', 'inspect', '--format', '{{json .Config.Labels}}', id)) as Record<string, string>)[label] : 'none';
  };
  /** Records of this test process's own: the budget of one store never touches another's images. */
  const records = (what: string, lastUsed?: (session: string) => Promise<number | undefined>) => ({
    store: `chat-images-${what}-${TEST_VERSION}`,
    exists: () => Promise.resolve(true),
    ...(lastUsed ? { lastUsed } : {}),
  });

  it('keeps only what pip installed: the files its RECORD lists, not what a program wrote into the user site', async function () {
    const provider = sandboxes.makeProvider({ spec: () => testSpec({ image: PIP_IMAGE }), options: { keepChatImages: true, chatRecords: records('pip') } });
    const h = host(root);
    const chat = uniqueSessionKey('chat-image-pip');
    const digest = sessionDigest(chat);
    this.test?.parent?.afterAll(() => provider.forgetChat(digest));
    // A wheel made here, installed by pip from the file (no index), then data a program wrote there.
    const install = [
      'import base64, hashlib, os, site, subprocess, sys, zipfile',
      "h = lambda b: 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()",
      "files = {'demo/__init__.py': b'VALUE = 7\\n', 'demo-1.0.dist-info/METADATA': b'Metadata-Version: 2.1\\nName: demo\\nVersion: 1.0\\n', 'demo-1.0.dist-info/WHEEL': b'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'}",
      "with zipfile.ZipFile('demo-1.0-py3-none-any.whl', 'w') as z:",
      '    for n, b in files.items():',
      '        z.writestr(n, b)',
      "    z.writestr('demo-1.0.dist-info/RECORD', ''.join('%s,%s,%d\\n' % (n, h(b), len(b)) for n, b in files.items()) + 'demo-1.0.dist-info/RECORD,,\\n')",
      "p = subprocess.run([sys.executable, '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-input', '--no-index', 'demo-1.0-py3-none-any.whl'], capture_output=True, text=True)",
      "print('pip exit', p.returncode, p.stderr[-300:])",
      'd = site.getusersitepackages()',
      "open(d + '/notes.txt', 'w').write('a program wrote this')",
      "open(d + '/demo/cache.bin', 'w').write('and this, in the package')",
      "os.makedirs(d + '/zz-9.dist-info', exist_ok=True)",
      "open(d + '/zz-9.dist-info/METADATA', 'w').write('Name: zz')",
      "os.symlink('/etc/passwd', d + '/demo/link.py') if not os.path.lexists(d + '/demo/link.py') else None",
    ].join('\n');
    assert.equal(await call(provider, h, chat, install), `stdout:\npip exit 0 \n\n${KEPT}`);
    // At once, as the capture begins: its reader runs between calls, never beside this one, which keeps its state.
    assert.equal(await call(provider, h, chat, 'import demo\nprint(demo.VALUE)'), `stdout:\n7\n\n${KEPT}`);
    await provider.chatImages!.settled(digest);
    await removeSandbox(provider, chat);

    assert.equal(
      await call(provider, h, chat, LIST_CHAT_SITE),
      [
        'stdout:',
        'demo/__init__.py 10',
        'demo-1.0.dist-info/INSTALLER 4',
        'demo-1.0.dist-info/METADATA 46',
        'demo-1.0.dist-info/RECORD 565',
        'demo-1.0.dist-info/REQUESTED 0',
        'demo-1.0.dist-info/WHEEL 75',
        'demo-1.0.dist-info/direct_url.json 89',
        // pip compiled it, and listed it in the RECORD.
        'demo/__pycache__/__init__.cpython-311.pyc 187',
        '',
        PREPARED('demo 1.0'),
        '',
        RESTORED(2),
        '',
        KEPT,
      ].join('\n'),
    );
    assert.equal(await labelOf(digest, 'dev.codeact-sandbox.chat.distributions'), '["demo 1.0"]');
    // The re-run wrote its data files again: the capture that follows finds nothing to keep, and ends before the test does.
    await provider.chatImages!.settled(digest);
  });

  it('never stores a sparse file whole: it is left out (under gVisor, which cannot tell, no more than the work area holds is read)', async function () {
    const provider = sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords: records('sparse'), chatImageLimits: { bytes: 256 * 1024 * 1024 } } });
    const h = host(root);
    const chat = uniqueSessionKey('chat-image-sparse');
    const digest = sessionDigest(chat);
    this.test?.parent?.afterAll(() => provider.forgetChat(digest));
    // Listed in its RECORD like any file of the package; 100 MiB long, with no byte written (the work area holds 64).
    const sparse = [distribution('sparsepkg', { 'sparsepkg/__init__.py': 'VALUE = 1', 'sparsepkg/big.bin': '' }), "    open(_d + '/sparsepkg/big.bin', 'wb').truncate(100 * 1024 * 1024)"].join('\n');
    assert.equal(await call(provider, h, chat, sparse), QUIET_KEPT);
    await provider.chatImages!.settled(digest);
    await removeSandbox(provider, chat);
    const listed = await call(provider, h, chat, LIST_CHAT_SITE);
    assert.equal(
      listed,
      byRuntime({
        runc: ['stdout:', 'sparsepkg/__init__.py 9', 'sparsepkg-1.0.dist-info/METADATA 51', 'sparsepkg-1.0.dist-info/RECORD 112', '', PREPARED('sparsepkg 1.0'), '', RESTORED(1), '', KEPT].join('\n'),
        // gVisor says the file's blocks are all there: it is read, and the read refused.
        gvisor: `${NOTHING_PRINTED}\n\n${RESTORED(1)}\n\n${KEPT}`,
      }),
    );
    await provider.chatImages!.settled(digest);
    // Two folders and three files (METADATA, RECORD, __init__.py), a block each.
    assert.equal(await labelOf(digest, 'dev.codeact-sandbox.chat.bytes'), byRuntime({ runc: String(5 * 4096), gvisor: 'none' }));
  });

  it("never reads through a folder swapped for a link after the capture's look: nothing root's reaches the chat's image", async function () {
    const provider = sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords: records('swap') } });
    const h = host(root);
    const chat = uniqueSessionKey('chat-image-swap');
    const digest = sessionDigest(chat);
    this.test?.parent?.afterAll(() => provider.forgetChat(digest));
    assert.equal(await call(provider, h, chat, 'x = 1'), QUIET_KEPT);
    const sandbox = provider.active.get(chat)!;
    // Root's folder in the work area, with a distribution in it the chat may not read.
    const vault = pack();
    const site = 'vault/lib/python3.11/site-packages';
    const dirs = ['vault', 'vault/lib', 'vault/lib/python3.11', site, `${site}/secretpkg`, `${site}/secretpkg-1.0.dist-info`];
    for (const d of dirs) vault.entry({ name: d, type: 'directory', mode: 0o700, uid: 0, gid: 0 });
    vault.entry({ name: `${site}/secretpkg/__init__.py`, mode: 0o600, uid: 0, gid: 0 }, "SECRET = 'root only'\n");
    vault.entry({ name: `${site}/secretpkg-1.0.dist-info/RECORD`, mode: 0o600, uid: 0, gid: 0 }, 'secretpkg/__init__.py,,\nsecretpkg-1.0.dist-info/RECORD,,\n');
    vault.finalize();
    await sandbox.container.putArchive(vault as unknown as Readable, { path: '/sandbox' });
    // The chat's program makes its user site's folder a link to it, as it would the moment after the look.
    const swap = [
      'import os, site',
      "os.symlink('/sandbox/vault', os.path.expanduser('~/.local'))",
      'try:',
      "    open(site.getusersitepackages() + '/secretpkg/__init__.py').read()",
      'except PermissionError:',
      "    print('the chat cannot read it')",
    ].join('\n');
    assert.equal(await call(provider, h, chat, swap), `stdout:\nthe chat cannot read it\n\n${KEPT}`);
    await provider.chatImages!.settled(digest);
    assert.equal(await imagesOf(digest), '');
    // The read itself, as the capture makes it once its look found folders only.
    const from = (await sandbox.container.inspect()).Image;
    const build = buildChatImage({
      docker,
      log,
      container: sandbox.container,
      sitePath: '/sandbox/home/.local/lib/python3.11/site-packages',
      between: (task) => sandbox.between(task),
      from,
      earlier: [],
      earlierBytes: 0,
      base: await configuredBase(docker, from),
      session: digest,
      source: 'test',
      store: records('swap').store,
      generation: 1,
      maxBytes: 4 * 1024 * 1024,
      workAreaBytes: 64 * 1024 * 1024,
      signal: new AbortController().signal,
    });
    // Had the read gone through the link, the sandbox user would read root's file in the image.
    const outcome = await build.then(
      async (image) => `built, with: ${await dockerCli('run', '--rm', '--network', 'none', '--user', '65534:65534', image.tag, 'cat', '/opt/codeact-sandbox/chat-site/secretpkg/__init__.py')}`,
      (e: Error & { at?: string }) => `${e.name} ${e.at}`,
    );
    assert.equal(outcome, 'LinkedSite /sandbox/home/.local');
    assert.equal(await imagesOf(digest), '');
  });

  it("holds all chats' images of a store within one total: the least recently used goes, and its chat installs again by replay", async function () {
    // Each chat's image: two folders, METADATA, RECORD and a file of two blocks: 6 blocks.
    const each = 6 * 4096;
    const provider = sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords: records('total'), chatImageLimits: { totalBytes: 2 * each } } });
    const h = host(root);
    const chats = ['a', 'b', 'c'].map((n) => uniqueSessionKey(`chat-image-total-${n}`));
    const digests = chats.map(sessionDigest);
    for (const d of digests) this.test?.parent?.afterAll(() => provider.forgetChat(d));
    const install = (n: number) => distribution(`total${n}pkg`, { [`total${n}pkg/data.py`]: `DATA = '${'x'.repeat(5000)}'` });
    for (const [n, chat] of chats.entries()) {
      assert.equal(await call(provider, h, chat, install(n)), QUIET_KEPT);
      await provider.chatImages!.settled(digests[n]!);
    }
    // Three images of 6 blocks past a total of 12: the first chat's, used least recently, went.
    assert.deepEqual(await Promise.all(digests.map(async (d) => (await imagesOf(d)) !== '')), [false, true, true]);
    assert.deepEqual(await Promise.all(digests.slice(1).map((d) => labelOf(d, 'dev.codeact-sandbox.chat.bytes'))), [String(each), String(each)]);

    // Its next sandbox is made from the configured image, and re-running its call installs again.
    await removeSandbox(provider, chats[0]!);
    assert.equal(await call(provider, h, chats[0]!, 'import total0pkg.data\nprint(len(total0pkg.data.DATA))'), `stdout:\n5000\n\n${RESTORED(1)}\n\n${KEPT}`);
    // Kept again, now the most recently used: the second chat's is the oldest now, and goes.
    await provider.chatImages!.settled(digests[0]!);
    assert.deepEqual(await Promise.all(digests.map(async (d) => (await imagesOf(d)) !== '')), [true, false, true]);
  });

  it('removes an image unused for 30 days; its chat installs again by replay', async function () {
    const store = records('unused');
    const first = sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords: store } });
    const h = host(root);
    const chat = uniqueSessionKey('chat-image-unused');
    const digest = sessionDigest(chat);
    this.test?.parent?.afterAll(() => first.forgetChat(digest));
    assert.equal(await call(first, h, chat, distribution('unusedpkg', { 'unusedpkg/__init__.py': 'VALUE = 3' })), QUIET_KEPT);
    await first.chatImages!.settled(digest);
    const made = await imagesOf(digest);
    assert.notEqual(made, '');
    await removeSandbox(first, chat);

    // A window opened 30 days later, the chat's last call then as long ago.
    const later = { ...systemClock, now: () => Date.now() + 30 * DAY };
    const provider = sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords: records('unused', () => Promise.resolve(Date.now())), clock: later } });
    assert.equal(await call(provider, h, chat, 'import unusedpkg\nprint(unusedpkg.VALUE)'), `stdout:\n3\n\n${RESTORED(1)}\n\n${KEPT}`);
    await provider.chatImages!.settled(digest);
    // The old image went; the one there now was built from the replayed install, after this call.
    const now = await imagesOf(digest);
    assert.notEqual(now, made);
    assert.equal((await dockerCli('image', 'inspect', made).catch(() => 'gone')), 'gone');
  });

  it('keeps the packages a chat installed as its image: its next sandbox has them without installing, says so, and they go with the chat', async function () {
    // The records of this test's chats: this chat has some until the end.
    const chatRecords = { store: 'resume-test', exists: () => Promise.resolve(true) };
    const first = sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords } });
    const h = host(root);
    const key = uniqueSessionKey('chat-image');
    const digest = sessionDigest(key);
    // The image carries no test label: it goes with the chat, also when the test fails.
    this.test?.parent?.afterAll(() => first.forgetChat(digest));
    // A hostile chat's bid for the runner (PID 1), which would read them if it started with them on its path.
    const bids = Object.fromEntries(['evil.pth', 'usercustomize.py', 'sitecustomize.py'].map((n) => [n, "import os; open('/sandbox/ran-%d' % os.getpid(), 'w').close()\n"]));
    const install = `${distribution('tinypkg', { 'tinypkg/__init__.py': 'VALUE = 7', ...bids })}\n    print('installed')`;
    assert.equal(await call(first, h, key, install), `stdout:\ninstalled\n\n${KEPT}`);
    // Taken after the call, off its way: the test waits for it to end.
    await first.chatImages!.settled(digest);
    const tag = `codeact-sandbox/chat-packages:${digest.slice(0, 16)}`;
    const labels = JSON.parse(await dockerCli('image', 'inspect', '--format', '{{json .Config.Labels}}', tag)) as Record<string, string>;
    assert.equal(labels['dev.codeact-sandbox.chat.distributions'], '["tinypkg 1.0"]');
    await removeSandbox(first, key);
    // As after a restart of VS Code: another process finds the chat's image on the engine.
    const provider = sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords } });

    const check = [
      'import os, tinypkg, importlib.metadata',
      "print(tinypkg.VALUE, tinypkg.__file__, importlib.metadata.version('tinypkg'))",
      "print('PID 1 ran them:', os.path.exists('/sandbox/ran-1'), '| a program did:', any(f.startswith('ran-') for f in os.listdir('/sandbox')))",
    ].join('\n');
    assert.equal(
      await call(provider, h, key, check),
      `stdout:\n7 /opt/codeact-sandbox/chat-site/tinypkg/__init__.py 1.0\nPID 1 ran them: False | a program did: True\n\n${PREPARED('tinypkg 1.0')}\n\n${RESTORED(1)}\n\n${KEPT}`,
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
    const provider = sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords: records('all-a') } });
    const h = host(root);
    const images = (digest: string) => dockerCli('images', '--quiet', '--filter', `label=dev.codeact-sandbox.chat.session=${digest}`);
    // ~/.local made a link elsewhere: the engine, reading as root, would follow it (to /root/.local as well).
    const linked = uniqueSessionKey('chat-image-link');
    const link = [
      'import os, site, tempfile',
      "away = tempfile.gettempdir() + '/elsewhere'",
      distribution('linkedpkg'),
      "os.rename(os.path.expanduser('~/.local'), away)",
      "os.symlink(away, os.path.expanduser('~/.local'))",
      'print(os.path.isdir(site.getusersitepackages()))',
    ].join('\n');
    assert.equal(await call(provider, h, linked, link), `stdout:\nTrue\n\n${KEPT}`);
    await provider.chatImages!.settled(sessionDigest(linked));
    assert.equal(await images(sessionDigest(linked)), '');

    const chat = uniqueSessionKey('chat-image-all');
    const digest = sessionDigest(chat);
    this.test?.parent?.afterAll(() => provider.forgetChat(digest));
    assert.equal(await call(provider, h, chat, distribution('allpkg')), QUIET_KEPT);
    await provider.chatImages!.settled(digest);
    const made = await images(digest);
    assert.match(made, /^[0-9a-f]{12}\n$/);
    // Another workspace's window deletes all of its chats: this one's image stays.
    await sandboxes.makeProvider({ options: { keepChatImages: true, chatRecords: records('all-b') } }).forgetChat(undefined);
    assert.equal(await images(digest), made);
    await provider.forgetChat(undefined);
    assert.equal(await images(digest), '');
  });

  it("stacks a chat's image at most its limit of builds, and keeps no more bytes than its limit", async function () {
    const provider = sandboxes.makeProvider({ options: { keepChatImages: true, chatImageLimits: { bytes: 12 * 4096, generations: 2 } } });
    const h = host(root);
    const chat = uniqueSessionKey('chat-image-stack');
    const digest = sessionDigest(chat);
    this.test?.parent?.afterAll(() => provider.forgetChat(digest));
    const labels = async (session: string) => {
      const found = await dockerCli('images', '--quiet', '--filter', `label=dev.codeact-sandbox.chat.session=${session}`);
      if (!found) return 'none';
      const l = JSON.parse(await dockerCli('image', 'inspect', '--format', '{{json .Config.Labels}}', found.trim())) as Record<string, string>;
      return `${l['dev.codeact-sandbox.chat.generation']} ${l['dev.codeact-sandbox.chat.distributions']} ${l['dev.codeact-sandbox.chat.bytes']}`;
    };
    const step = async (chatKey: string, name: string) => {
      await call(provider, h, chatKey, distribution(name));
      await provider.chatImages!.settled(sessionDigest(chatKey));
      const l = await labels(sessionDigest(chatKey));
      await removeSandbox(provider, chatKey);
      return l;
    };
    // Each: its dist-info folder, METADATA and RECORD: 3 blocks.
    assert.equal(await step(chat, 'gen1pkg'), `1 ["gen1pkg 1.0"] ${3 * 4096}`);
    assert.equal(await step(chat, 'gen2pkg'), `2 ["gen1pkg 1.0","gen2pkg 1.0"] ${6 * 4096}`);
    // A third build would stack past the limit: the image stays as it was.
    assert.equal(await step(chat, 'gen3pkg'), `2 ["gen1pkg 1.0","gen2pkg 1.0"] ${6 * 4096}`);

    const large = uniqueSessionKey('chat-image-large');
    this.test?.parent?.afterAll(() => provider.forgetChat(sessionDigest(large)));
    // Two folders, METADATA, RECORD and 9 blocks of data: 13 blocks of 12, so no image at all.
    await call(provider, h, large, distribution('largepkg', { 'largepkg/data.py': `DATA = '${'x'.repeat(8 * 4096)}'` }));
    await provider.chatImages!.settled(sessionDigest(large));
    assert.equal(await labels(sessionDigest(large)), 'none');
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
    await dockerCli('tag', PIP_IMAGE, moved);
    assert.notEqual(await idOf(moved), madeFrom);
    assert.equal(await call(provider, h, chat, distribution('movedpkg')), QUIET_KEPT);
    await provider.chatImages!.settled(digest);
    const base = await dockerCli('image', 'inspect', '--format', '{{index .Config.Labels "dev.codeact-sandbox.chat.base"}}', `codeact-sandbox/chat-packages:${digest}`);
    assert.equal(base.trim(), madeFrom);
  });
});
