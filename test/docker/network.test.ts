/**
 * The opt-in network against hostile programs, on a real engine. The "internet" is the tests'
 * own (fixtures/testInternet.ts): servers on a network the test creates, under .test names only
 * the tests' proxy resolves. Every address a program here names is one of those servers, the
 * proxy, or the sandbox network's own gateway. On Docker, a policy's sandboxes share one proxy on
 * an internal network; on Podman, each sandbox joins its own proxy's namespace, behind a firewall.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { networkPolicy, type Connection } from '../../src/core/network';
import type { SandboxNetwork, SandboxSpec } from '../../src/docker/container/spec';
import { egressNames, releaseIdleEgress } from '../../src/docker/network/egress';
import { removeQuietly } from '../../src/docker/container/spec';
import { makeWheel } from './fixtures/simpleIndex';
import { NAMES, startTestInternet, type TestInternet } from './fixtures/testInternet';
import { LABEL } from '../../src/docker/container/labels';
import { RunRecording } from '../../src/storage/runRecorder';
import { sessionDigest } from '../../src/core/session';
import { STATE_LINES } from '../../src/core/state';
import { sessionCall, sessionHost } from './fixtures/sessionHost';
import { FORGE_EXIT_REPORT, TEST_ENGINE, docker, dockerCli, exists, log, recentLog, run, testSpec, uniqueSessionKey, useDocker, waitFor } from './helpers';

/** Python the tests' programs start with: the test CA trusted, and get(url) saying what came back. */
function prelude(caPem: string): string {
  return [
    'import os, socket, ssl, urllib.error, urllib.request',
    `open('ca.pem', 'w').write(${JSON.stringify(caPem)})`,
    "CTX = ssl.create_default_context(cafile='ca.pem')",
    'def get(url, opener=None, timeout=20):',
    '    try:',
    '        with (opener.open(url, timeout=timeout) if opener else urllib.request.urlopen(url, timeout=timeout, context=CTX)) as r:',
    '            return r.read().decode()',
    '    except urllib.error.HTTPError as e:',
    "        return f'HTTP {e.code}'",
    '    except Exception as e:',
    "        return f'{type(e).__name__}: {getattr(e, \"reason\", e)}'",
    'def show(*urls):',
    '    for u in urls:',
    "        print(u, '->', get(u))",
  ].join('\n');
}

/** A connection as the assertions compare it: what, where, and the verdict. */
const brief = (c: Connection) => [c.method, `${c.host}:${c.port}`, c.allowed ? 'allowed' : c.reason];

/** Resolves once the proxy logs a connection after `since` whose line includes `text`. */
async function untilLogLine(container: string, text: string, since: number): Promise<void> {
  const stream = (await docker.getContainer(container).logs({ follow: true, stdout: true, stderr: false, since: Math.floor(since / 1000) })) as unknown as NodeJS.ReadableStream & { destroy(): void };
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    stream.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      // Each line: "codeact-net <seconds.millis> ..." (squidConfig's format), after the engine's frame header.
      if (seen.split('\n').some((l) => l.includes(text) && Number(/codeact-net (\S+)/.exec(l)?.[1]) * 1000 >= since)) resolve();
    });
    stream.on('end', () => reject(new Error(`${container}'s log ended without ${JSON.stringify(text)}`)));
  });
  stream.destroy();
}

/** The proxy a sandbox goes through: its policy's (Docker), or its own, named by its label (Podman). */
async function proxyOf(sandboxId: string, network: SandboxNetwork): Promise<string> {
  if (TEST_ENGINE === 'docker') return egressNames(network).proxy;
  const proxy = (await docker.getContainer(sandboxId).inspect()).Config.Labels?.[LABEL.proxy];
  assert.ok(proxy, `sandbox ${sandboxId} names no proxy`);
  return proxy;
}

/** The network a sandbox joined: its own internal one (Docker), or `container:<proxy>` (Podman). */
async function networkModeOf(sandboxId: string): Promise<string> {
  return (await docker.getContainer(sandboxId).inspect()).HostConfig.NetworkMode ?? '';
}

/** What the model is told with a new sandbox's first result (literal on purpose: a change must show up here). */
const TOLD = (allowed: string, never = '') =>
  `This sandbox has network access to these domains only: ${allowed}${never ? ` (never ${never})` : ''}, on ports 80 and 443, through a proxy that urllib, requests, pip and curl use by themselves (HTTP_PROXY and HTTPS_PROXY are set). Every other name is refused.`;
const TOLD_LISTS = TOLD('*.sub.codeact.test, index.codeact.test, inside.codeact.test, loop.codeact.test, web.codeact.test', 'denied.sub.codeact.test');

/** Python: tcp(host, port) connects straight (no proxy) and says what became of it. */
const TCP = [
  'def tcp(host, port):',
  '    try:',
  '        with socket.create_connection((host, port), timeout=15) as c:',
  "            return f'connected, read {c.recv(16)!r}'",
  '    except socket.gaierror as e:',
  "        return f'no name resolution ({e.errno})'",
  '    except socket.timeout:',
  "        return 'timed out'",
  '    except OSError as e:',
  "        return f'errno {e.errno}'",
].join('\n');

/** Python for a server a program could start: it answers "A" to every connection, and prints once it listens. */
const SERVER = [
  'import os, socket',
  's = socket.socket()',
  's.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)',
  "s.bind(('0.0.0.0', 8080))",
  's.listen()',
  'if os.fork() == 0:',
  '    os.setsid()',
  '    while True:',
  '        c, _ = s.accept()',
  "        c.sendall(b'A')",
  '        c.close()',
  "print('listening', flush=True)",
].join('\n');

const PIP_IMAGE = 'codeact-sandbox/python-pip:bookworm';
const RESET = 'URLError: [Errno 104] Connection reset by peer';

describe('network allow-list (integration)', function () {
  this.timeout(300_000);
  let internet: TestInternet;
  // Before useDocker(): its after() hook checks that nothing is left, the tests' own network included.
  before(async function () {
    const wheel = await makeWheel('codeact-demo-net', '1.0.0', 'def answer():\n    return 42\n');
    internet = await startTestInternet([wheel]);
  });
  after(async function () {
    await internet?.stop();
  });
  const sandboxes = useDocker();

  function networkOf(allow: string[], deny: string[] = []): SandboxNetwork {
    const { policy } = networkPolicy(allow, deny);
    return { policy: policy!, testing: internet.testing };
  }
  const LISTS = () => networkOf([NAMES.web, '*.sub.codeact.test', NAMES.inside, NAMES.loop, NAMES.index], [NAMES.denied]);
  const providerFor = (spec: () => SandboxSpec) => sandboxes.makeProvider({ spec });

  /**
   * A call whose program fetches until its proxy is killed, which happens once the proxy logged its
   * first request: the program finds out, and the model is told `sentence`.
   */
  async function killedDuringRun(provider: ReturnType<typeof providerFor>, session: string, proxy: string, sentence: string) {
    const during = [
      prelude(internet.caPem),
      `import time`,
      `print(get('http://${NAMES.web}/'))`,
      `while get('http://${NAMES.web}/', timeout=2).startswith('${NAMES.web}'):`,
      '    time.sleep(0.05)',
      // While the proxy's processes are being killed, a connection can still be accepted and then
      // reset, or (both cores busy) accepted and never answered: each try waits 2 s at most, not
      // the call's whole 30 s. Once they are gone it is refused; the program waits for that end state.
      'for _ in range(200):',
      `    then = get('http://${NAMES.web}/', timeout=2)`,
      "    if then.startswith('URLError: [Errno 111]'):",
      '        break',
      '    time.sleep(0.05)',
      "print('then:', then)",
    ].join('\n');
    // A connection is logged when it ends: the first request's line says the program is running.
    const killer = untilLogLine(proxy, ` GET ${NAMES.web} 80 200 `, Date.now()).then(() => dockerCli('kill', proxy));
    const result = await run(provider, session, during);
    await killer;
    assert.equal(result.text, ['stdout:', `${NAMES.web} / http`, 'then: URLError: [Errno 111] Connection refused', '', sentence].join('\n'));
    assert.equal(result.network?.complete, false);
  }

  it('reaches allowed names over HTTP and HTTPS, and records each connection', async function () {
    const network = LISTS();
    const provider = providerFor(() => testSpec({ network }));
    const session = uniqueSessionKey('net-allowed');
    const r = await run(provider, session, `${prelude(internet.caPem)}\nshow('http://${NAMES.web}/a', 'https://${NAMES.web}/b', 'https://${NAMES.api}/c')`);
    assert.equal(
      r.text,
      [
        'stdout:',
        `http://${NAMES.web}/a -> ${NAMES.web} /a http`,
        `https://${NAMES.web}/b -> ${NAMES.web} /b https`,
        `https://${NAMES.api}/c -> ${NAMES.api} /c https`,
        '',
        TOLD_LISTS,
      ].join('\n'),
    );
    assert.equal(r.network?.complete, true);
    assert.deepEqual(r.network.connections.map(brief), [
      ['GET', `${NAMES.web}:80`, 'allowed'],
      ['CONNECT', `${NAMES.web}:443`, 'allowed'],
      ['CONNECT', `${NAMES.api}:443`, 'allowed'],
    ]);
    assert.deepEqual(r.network.connections.map((c) => c.sni ?? '-'), ['-', NAMES.web, NAMES.api]);
    for (const c of r.network.connections) assert.ok(c.bytesIn > 0 && c.bytesOut > 0, JSON.stringify(c));
    assert.ok(r.network.connections.every((c) => c.time >= r.startedAt.getTime() && c.time <= Date.now()));
    // The next call, at once: its record starts after this call's marker, so it holds its own connection only.
    const next = await run(provider, session, `${prelude(internet.caPem)}\nshow('http://${NAMES.web}/d')`);
    assert.equal(next.text, `stdout:\nhttp://${NAMES.web}/d -> ${NAMES.web} /d http`);
    assert.deepEqual(next.network?.connections.map(brief), [['GET', `${NAMES.web}:80`, 'allowed']]);
  });

  it("a kept run re-run to rebuild a removed sandbox's state reaches the network only on the record: its connections are in the call's", async function () {
    const provider = providerFor(() => testSpec({ network: LISTS() }));
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-net-replay-'));
    try {
      const h = sessionHost(root);
      const key = uniqueSessionKey('net-replay');
      const first = await sessionCall(provider, h, key, `${prelude(internet.caPem)}\npage = get('http://${NAMES.web}/kept')`);
      assert.deepEqual(first.network?.connections.map(brief), [['GET', `${NAMES.web}:80`, 'allowed']]);
      await dockerCli('rm', '-f', provider.active.get(key)!.id);

      const since = Date.now();
      const rebuilt = await sessionCall(provider, h, key, `print(page)\nprint(get('http://${NAMES.web}/own'))`);
      assert.match(rebuilt.text, new RegExp(`^stdout:\n${NAMES.web} /kept http\n${NAMES.web} /own http\n\n`));
      const [, firstRecord] = await h.store.listRuns(new RunRecording(h.store, key).writer.sessionDigest);
      const seen = (c: Connection) => [...brief(c), c.replayOf ?? 'the call'];
      const expected = [
        ['GET', `${NAMES.web}:80`, 'allowed', firstRecord!.runId],
        ['GET', `${NAMES.web}:80`, 'allowed', 'the call'],
      ];
      assert.deepEqual(rebuilt.network?.connections.map(seen), expected);
      assert.equal(rebuilt.network?.complete, true);
      assert.ok(rebuilt.network!.connections.every((c) => c.time >= since));
      // As the store keeps it (the view's "Show Program and Output" reads this record).
      const [latest] = await h.store.listRuns(new RunRecording(h.store, key).writer.sessionDigest);
      assert.deepEqual(latest!.network?.connections.map(seen), expected);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("a package a chat installed through the allow-list is importable at its next call, and its next sandbox has it without reaching the index again", async function () {
    const provider = sandboxes.makeProvider({ spec: () => testSpec({ image: PIP_IMAGE, network: LISTS() }), options: { keepChatImages: true } });
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-net-chat-image-'));
    const key = uniqueSessionKey('net-chat-image');
    const digest = sessionDigest(key);
    try {
      const h = sessionHost(root);
      // pip as the model would write it: no --target, no --user; it installs into the user site.
      const install = [
        prelude(internet.caPem),
        'import subprocess, sys',
        `p = subprocess.run([sys.executable, '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-input', '--cert', 'ca.pem', '--index-url', 'https://${NAMES.index}/simple', 'codeact-demo-net'], capture_output=True, text=True)`,
        "print('pip exit', p.returncode, p.stderr[-300:])",
      ].join('\n');
      const first = await sessionCall(provider, h, key, install);
      assert.equal(first.text, `stdout:\npip exit 0 \n\n${TOLD_LISTS}\n\n${STATE_LINES.kept}`);
      assert.deepEqual(first.network?.connections.map(brief), [['CONNECT', `${NAMES.index}:443`, 'allowed']]);
      // The user site pip made after the sandbox started is on the next program's path.
      assert.equal((await sessionCall(provider, h, key, 'import codeact_demo_net\nprint(codeact_demo_net.answer())')).text, `stdout:\n42\n\n${STATE_LINES.kept}`);
      await provider.chatImages!.settled(digest);
      await dockerCli('rm', '-f', provider.active.get(key)!.id);

      const rebuilt = await sessionCall(provider, h, key, 'print(codeact_demo_net.answer(), codeact_demo_net.__file__)');
      assert.equal(
        rebuilt.text.replace(/in order \(\d+\.\d s\)/, 'in order (<s> s)'),
        [
          'stdout:',
          '42 /opt/codeact-sandbox/chat-site/codeact_demo_net/__init__.py',
          '',
          "This chat's sandbox was made again from its prepared image, which has the Python packages installed earlier in this chat (codeact_demo_net 1.0.0): they were not installed again, and pip finds them installed.",
          '',
          TOLD_LISTS,
          '',
          "State: restored before this call by re-running this chat's 2 kept runs in order (<s> s), because its sandbox had been removed. Values computed from time, randomness, the network or workspace files that changed since may differ from before; files those runs wrote were written again.",
          '',
          STATE_LINES.kept,
        ].join('\n'),
      );
      // The re-run pip found the package installed: nothing reached the index.
      assert.deepEqual(rebuilt.network?.connections, []);
    } finally {
      await provider.forgetChat(digest);
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('refuses denied, unlisted, address, private and loopback names and other ports, and tells the model which', async function () {
    const provider = providerFor(() => testSpec({ network: LISTS() }));
    const urls = [`https://${NAMES.denied}/`, `http://${NAMES.other}/`, `https://${NAMES.inside}/`, `http://${NAMES.loop}/`, `http://${internet.web}/`, `https://${NAMES.web}:8443/`];
    const r = await run(provider, uniqueSessionKey('net-refused'), `${prelude(internet.caPem)}\nshow(${urls.map((u) => JSON.stringify(u)).join(', ')})`);
    assert.equal(
      r.text,
      [
        'stdout:',
        `https://${NAMES.denied}/ -> ${RESET}`,
        `http://${NAMES.other}/ -> HTTP 403`,
        `https://${NAMES.inside}/ -> ${RESET}`,
        `http://${NAMES.loop}/ -> HTTP 403`,
        `http://${internet.web}/ -> HTTP 403`,
        `https://${NAMES.web}:8443/ -> ${RESET}`,
        '',
        TOLD_LISTS,
        '',
        `The sandbox's network proxy blocked: ${NAMES.denied} (on the deny-list), ${NAMES.other} (not on the allow-list), ${NAMES.inside} (resolves to a private or loopback address), ` +
          `${NAMES.loop} (resolves to a private or loopback address), ${internet.web} (an IP address, not a name), ${NAMES.web} (port 8443 is not allowed). ` +
          'If the program needs a name that is not on the allow-list, ask the user to add it to the codeactSandbox.network.allow setting. Do not try to get around the proxy: nothing else leaves the sandbox.',
      ].join('\n'),
    );
    assert.deepEqual(r.network?.connections.map(brief), [
      ['CONNECT', `${NAMES.denied}:443`, 'denied'],
      ['GET', `${NAMES.other}:80`, 'not listed'],
      ['CONNECT', `${NAMES.inside}:443`, 'private address'],
      ['GET', `${NAMES.loop}:80`, 'private address'],
      ['GET', `${internet.web}:80`, 'address'],
      ['CONNECT', `${NAMES.web}:8443`, 'port'],
    ]);
  });

  it('gives a program that goes around the proxy nothing: no DNS, no route, no UDP, no raw socket, no other hello, no plain tunnel', async function () {
    const network = LISTS();
    const provider = providerFor(() => testSpec({ network }));
    const session = uniqueSessionKey('net-hostile');
    const warm = await run(provider, session, 'print(1)');
    assert.equal(warm.text, `stdout:\n1\n\n${TOLD_LISTS}`);
    const proxy = await docker.getContainer(await proxyOf(warm.sandboxId, network)).inspect();
    const otherSide = proxy.NetworkSettings.Networks[internet.network].IPAddress;
    // The gateway of the network the sandbox is on: the internal one (Docker), the proxy's (Podman; the host holds it).
    const gateway =
      TEST_ENGINE === 'docker'
        ? (await docker.getContainer(warm.sandboxId).inspect()).NetworkSettings.Networks[await networkModeOf(warm.sandboxId)].Gateway
        : proxy.NetworkSettings.Networks[internet.network].Gateway;
    assert.ok(otherSide && gateway, JSON.stringify({ otherSide, gateway }));
    const code = [
      prelude(internet.caPem),
      "PROXY = os.environ['HTTP_PROXY']",
      "PROXY_HOST = PROXY.split('//')[1].split(':')[0]",
      "for k in [k for k in os.environ if k.lower() in ('http_proxy', 'https_proxy', 'all_proxy')]:",
      '    del os.environ[k]',
      TCP,
      'def tunnel(host, hello=None, plain=False):',
      '    s = socket.create_connection((PROXY_HOST, 3128), timeout=15)',
      "    s.sendall(f'CONNECT {host}:443 HTTP/1.1\\r\\nHost: {host}:443\\r\\n\\r\\n'.encode())",
      "    status = s.recv(4096).split(b'\\r\\n')[0].decode()",
      '    try:',
      '        if plain:',
      "            s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n')",
      "            return f'{status}; {s.recv(4096)!r}'",
      '        t = CTX.wrap_socket(s, server_hostname=hello)',
      "        t.sendall(f'GET /tunnel HTTP/1.0\\r\\nHost: {hello}\\r\\nConnection: close\\r\\n\\r\\n'.encode())",
      "        data = b''",
      '        while chunk := t.recv(4096):',
      '            data += chunk',
      "        return f'{status}; {data.decode().splitlines()[-1]}'",
      '    except Exception as e:',
      "        return f'{status}; {type(e).__name__}'",
      `print('name lookup:', tcp(${JSON.stringify(NAMES.web)}, 80))`,
      `print('server directly:', tcp(${JSON.stringify(internet.web)}, 80))`,
      `print("proxy's other side:", tcp(${JSON.stringify(otherSide)}, 3128))`,
      `print('network gateway:', tcp(${JSON.stringify(gateway)}, 3128))`,
      'u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)',
      // Docker: sent into a network with no route; Podman: refused by the firewall (EPERM).
      `try:\n    u.sendto(b'ping', (${JSON.stringify(internet.web)}, 53))\nexcept OSError:\n    pass`,
      "try:\n    socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n    print('raw socket: opened')\nexcept OSError as e:\n    print('raw socket: errno', e.errno)",
      `print('hello naming the host:', tunnel(${JSON.stringify(NAMES.web)}, ${JSON.stringify(NAMES.web)}))`,
      `print('hello naming another:', tunnel(${JSON.stringify(NAMES.web)}, ${JSON.stringify(NAMES.other)}))`,
      `print('plain bytes in a tunnel:', tunnel(${JSON.stringify(NAMES.web)}, plain=True))`,
      'def ask_proxy(request):',
      '    s = socket.create_connection((PROXY_HOST, 3128), timeout=15)',
      '    s.sendall(request)',
      "    return s.recv(4096).split(b'\\r\\n')[0].decode()",
      `print("proxy's cache manager:", ask_proxy(b'GET cache_object://${NAMES.web}/info HTTP/1.0\\r\\n\\r\\n'))`,
      `print('ftp through the proxy:', ask_proxy(b'GET ftp://${NAMES.web}/ HTTP/1.0\\r\\n\\r\\n'))`,
      "print('IPv6 addresses:', len(open('/proc/net/if_inet6').read().splitlines()) if os.path.exists('/proc/net/if_inet6') else 0)",
      "via = urllib.request.build_opener(urllib.request.ProxyHandler({'http': PROXY}))",
      `print('server says:', get('http://${NAMES.web}/udp', via))`,
    ].join('\n');
    const r = await run(provider, session, code);
    // 113 is EHOSTUNREACH: on Docker the only route is the internal network's, whose gateway
    // nobody holds; on Podman the namespace's firewall refuses everyone but the proxy's user.
    assert.equal(
      r.text,
      [
        'stdout:',
        'name lookup: no name resolution (-3)',
        'server directly: errno 113',
        "proxy's other side: errno 113",
        'network gateway: errno 113',
        'raw socket: errno 1',
        `hello naming the host: HTTP/1.1 200 Connection established; ${NAMES.web} /tunnel https`,
        'hello naming another: HTTP/1.1 200 Connection established; SSLZeroReturnError',
        "plain bytes in a tunnel: HTTP/1.1 200 Connection established; b''",
        "proxy's cache manager: HTTP/1.1 403 Forbidden",
        'ftp through the proxy: HTTP/1.1 403 Forbidden',
        'IPv6 addresses: 0',
        'server says: udp datagrams: 0',
        '',
        `The sandbox's network proxy blocked: ${NAMES.web} (the TLS hello named ${NAMES.other}), ${NAMES.web} (not TLS), ${NAMES.web} (only http:// and HTTPS tunnels are allowed). Do not try to get around the proxy: nothing else leaves the sandbox.`,
      ].join('\n'),
    );
    assert.deepEqual(r.network?.connections.map(brief), [
      ['CONNECT', `${NAMES.web}:443`, 'allowed'],
      ['CONNECT', `${NAMES.web}:443`, 'sni'],
      ['CONNECT', `${NAMES.web}:443`, 'not tls'],
      ['GET', `${NAMES.web}:3128`, 'scheme'],
      ['GET', `${NAMES.web}:21`, 'scheme'],
      ['GET', `${NAMES.web}:80`, 'allowed'],
    ]);
  });

  it('leaves a sandbox no peer but its proxy: a server in one is out of reach of another with the same lists, by address and by name', async function () {
    const network = networkOf([NAMES.web]);
    const provider = providerFor(() => testSpec({ network }));
    const [sessionA, sessionB] = [uniqueSessionKey('net-peer-a'), uniqueSessionKey('net-peer-b')];
    const a = await run(provider, sessionA, 'print(1)');
    const aInfo = await docker.getContainer(a.sandboxId).inspect();
    const aName = aInfo.Name.replace(/^\//, '');
    // Where another sandbox would find A: its address on its own network (Docker), its proxy's on the outside one (Podman).
    const aAddress =
      TEST_ENGINE === 'docker'
        ? aInfo.NetworkSettings.Networks[await networkModeOf(a.sandboxId)].IPAddress
        : (await docker.getContainer(await proxyOf(a.sandboxId, network)).inspect()).NetworkSettings.Networks[internet.network].IPAddress;
    assert.ok(aAddress, 'sandbox A has an address');
    // The server, started in A as any program of A's could start it; it answers A's own programs.
    assert.equal(await dockerCli('exec', a.sandboxId, 'python3', '-c', SERVER), 'listening\n');
    const own = await run(provider, sessionA, `import socket\n${TCP}\nprint(tcp('127.0.0.1', 8080))`);
    assert.equal(own.text, "stdout:\nconnected, read b'A'");
    const b = await run(provider, sessionB, [
      'import socket',
      TCP,
      `print('by address:', tcp(${JSON.stringify(aAddress)}, 8080))`,
      `print('by name:', tcp(${JSON.stringify(aName)}, 8080))`,
    ].join('\n'));
    assert.notEqual(b.sandboxId, a.sandboxId);
    assert.equal(b.text, ['stdout:', 'by address: errno 113', 'by name: no name resolution (-3)', '', TOLD(NAMES.web)].join('\n'));
    assert.deepEqual(b.network?.connections, []);
    await provider.dispose();
  });

  it("fences the proxy's own traffic in the kernel: TCP 80 and 443 to addresses it may reach, nothing else", async function () {
    const network = networkOf([NAMES.web]);
    const provider = providerFor(() => testSpec({ network }));
    const warm = await run(provider, uniqueSessionKey('net-fence'), 'print(1)');
    const proxy = await proxyOf(warm.sandboxId, network);
    // As squid's own user, past squid: what the proxy's firewall alone lets out.
    const tcp = (host: string, port: number) =>
      dockerCli('exec', '-u', 'proxy', proxy, 'bash', '-c', `timeout 10 bash -c 'exec 3<>/dev/tcp/${host}/${port}' 2>/dev/null && echo connected || echo refused`).then((o) => o.trim());
    const seen = [
      ['test server, port 80', await tcp(internet.web, 80)],
      ['test server, port 443', await tcp(internet.web, 443)],
      ['test server, port 8080', await tcp(internet.web, 8080)],
      ['a private address on port 80', await tcp(internet.second, 80)],
    ];
    await dockerCli('exec', '-u', 'proxy', proxy, 'bash', '-c', `echo ping > /dev/udp/${internet.web}/53 || true`);
    const udp = await run(provider, uniqueSessionKey('net-fence-udp'), `${prelude(internet.caPem)}\nprint(get('http://${NAMES.web}/udp'))`);
    assert.deepEqual(seen, [
      ['test server, port 80', 'connected'],
      ['test server, port 443', 'connected'],
      ['test server, port 8080', 'refused'],
      ['a private address on port 80', 'refused'],
    ]);
    assert.equal(udp.text.split('\n')[1], 'udp datagrams: 0');
    await provider.dispose();
  });

  it('records a tunnel whose program only said it exited: the program ends with the call, and its tunnel is in the record', async function () {
    const network = networkOf([NAMES.web]);
    const provider = providerFor(() => testSpec({ network }));
    const key = uniqueSessionKey('net-open');
    // A call's processes end with it (also one that faked its exit report, exitNotice.test.ts,
    // and went on holding a tunnel), and session state with open sockets is not kept: the
    // tunnel is closed, and so logged, before the call's end marker. (A tunnel still open then is
    // kept as open: callRecord.ts, unit-tested.)
    const code = [
      prelude(internet.caPem),
      'import ctypes',
      "PROXY_HOST = os.environ['HTTP_PROXY'].split('//')[1].split(':')[0]",
      's = socket.create_connection((PROXY_HOST, 3128), timeout=15)',
      `s.sendall(b'CONNECT ${NAMES.web}:443 HTTP/1.1\\r\\nHost: ${NAMES.web}:443\\r\\n\\r\\n')`,
      's.recv(4096)',
      `t = CTX.wrap_socket(s, server_hostname='${NAMES.web}')`,
      `t.sendall(b'GET /kept HTTP/1.1\\r\\nHost: ${NAMES.web}\\r\\n\\r\\n')`,
      "print(t.recv(4096).split(b'\\r\\n')[0].decode(), flush=True)",
      ...FORGE_EXIT_REPORT,
      'os.close(1)',
      'os.close(2)',
      'while True:',
      '    t.recv(1)',
    ].join('\n');
    const first = await run(provider, key, code, { limits: { timeoutMs: 30_000 } });
    assert.equal(first.text.split('\n')[1], 'HTTP/1.1 200 OK');
    const [tunnel] = first.network?.connections ?? [];
    assert.deepEqual([...brief(tunnel), tunnel.open, tunnel.serverAddress, tunnel.bytesIn > 0], ['CONNECT', `${NAMES.web}:443`, 'allowed', undefined, internet.web, true]);
    assert.equal(first.network?.connections.length, 1);
    await provider.dispose();
  });

  it('closes, and so records, the tunnel of a daemon a program left before the call\'s end marker: not open with 0 bytes, nor counted in the next call', async function () {
    // Without the warm runner nothing of the runner's ends what a program left when `docker exec`
    // returns: the end-of-call marker itself must end it, and wait until it is dead.
    const network = networkOf([NAMES.web]);
    const provider = providerFor(() => testSpec({ network, warmRunner: false }));
    const key = uniqueSessionKey('net-daemon');
    const code = [
      prelude(internet.caPem),
      "PROXY_HOST = os.environ['HTTP_PROXY'].split('//')[1].split(':')[0]",
      'r, w = os.pipe()',
      'if os.fork() == 0:',
      '    os.setsid()',
      '    if os.fork() == 0:',
      '        os.close(1)',
      '        os.close(2)',
      '        s = socket.create_connection((PROXY_HOST, 3128), timeout=15)',
      `        s.sendall(b'CONNECT ${NAMES.web}:443 HTTP/1.1\\r\\nHost: ${NAMES.web}:443\\r\\n\\r\\n')`,
      '        s.recv(4096)',
      `        t = CTX.wrap_socket(s, server_hostname='${NAMES.web}')`,
      `        t.sendall(b'GET /daemon HTTP/1.1\\r\\nHost: ${NAMES.web}\\r\\n\\r\\n')`,
      '        t.recv(4096)',
      "        os.write(w, b'up')",
      '        while True:',
      '            t.recv(1)',
      '    os._exit(0)',
      'os.read(r, 2)',
      "print('tunnel up')",
    ].join('\n');
    const first = await run(provider, key, code);
    assert.equal(first.text.split('\n')[1], 'tunnel up');
    const [tunnel] = first.network?.connections ?? [];
    assert.deepEqual([...brief(tunnel), tunnel.open, tunnel.serverAddress, tunnel.bytesIn > 0], ['CONNECT', `${NAMES.web}:443`, 'allowed', undefined, internet.web, true]);
    assert.deepEqual([first.network?.connections.length, first.network?.complete], [1, true]);
    const next = await run(provider, key, 'print("next")');
    assert.deepEqual([next.text, next.network?.connections, next.network?.complete], ['stdout:\nnext', [], true]);
    await provider.dispose();
  });

  it("ends a call's processes before its marker but spares the runner's child forked ahead: the next call runs in it", async function () {
    const network = networkOf([NAMES.web]);
    const provider = providerFor(() => testSpec({ network }));
    const key = uniqueSessionKey('net-ahead');
    const first = await run(provider, key, `${prelude(internet.caPem)}\nshow('http://${NAMES.web}/')`);
    assert.deepEqual(first.network?.connections.map(brief), [['GET', `${NAMES.web}:80`, 'allowed']]);
    const list = "import os\nfor p in os.listdir('/proc'):\n    if p.isdigit() and open(f'/proc/{p}/comm').read().strip() == 'codeact-waiting':\n        print(p)";
    let waiting = '';
    await waitFor(async () => {
      waiting = (await dockerCli('exec', '-u', '0', first.sandboxId, 'python3', '-c', list)).trim();
      return /^\d+$/.test(waiting);
    }, "the runner's child forked ahead");
    const next = await run(provider, key, 'import os\nprint(os.getpid())');
    assert.equal(next.text, `stdout:\n${waiting}`);
    await provider.dispose();
  });

  it('keeps the allowed connections of a call that floods the proxy with refused ones, and counts the rest', async function () {
    const network = networkOf([NAMES.web]);
    const provider = providerFor(() => testSpec({ network }));
    const code = [
      prelude(internet.caPem),
      "PROXY_HOST = os.environ['HTTP_PROXY'].split('//')[1].split(':')[0]",
      'def ask(host):',
      '    with socket.create_connection((PROXY_HOST, 3128), timeout=15) as c:',
      "        c.sendall(f'GET http://{host}/ HTTP/1.0\\r\\nHost: {host}\\r\\n\\r\\n'.encode())",
      '        while c.recv(65536):',
      '            pass',
      // Long names, each a refusal the proxy logs: more than the record keeps.
      "long = ('a' * 60 + '.') * 3",
      'for i in range(1200):',
      "    ask(f'{long}n{i}.codeact.test')",
      `print(get('http://${NAMES.web}/after-the-flood'))`,
    ].join('\n');
    const r = await run(provider, uniqueSessionKey('net-flood'), code);
    assert.equal(r.text.split('\n')[1], `${NAMES.web} /after-the-flood http`);
    const connections = r.network?.connections ?? [];
    assert.equal(r.network?.complete, true);
    // The first 200 refused ones (the allowed one among the first connections too, listed last),
    // the last 300 refused ones, and one entry each for the first 200 names between them; the
    // other 500 are counted.
    assert.deepEqual(r.network?.omitted, { allowed: 0, blocked: 500 });
    assert.equal(connections.filter((c) => !c.allowed).length, 200 + 200 + 300);
    assert.deepEqual(connections.filter((c) => c.allowed).map(brief), [['GET', `${NAMES.web}:80`, 'allowed']]);
    const name = (i: number) => `${'a'.repeat(60)}.${'a'.repeat(60)}.${'a'.repeat(60)}.n${i}.codeact.test`;
    assert.deepEqual([connections[0].host, connections[399].host, connections[400].host, connections.at(-1)!.host], [name(0), name(399), name(900), NAMES.web]);
    await provider.dispose();
  });

  it('lets pip install --target into the run directory from an allowed index', async function () {
    const provider = providerFor(() => testSpec({ image: PIP_IMAGE, network: LISTS() }));
    const code = [
      prelude(internet.caPem),
      'import subprocess, sys',
      `p = subprocess.run([sys.executable, '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-input', '--cert', 'ca.pem', '--index-url', 'https://${NAMES.index}/simple', '--target', 'pkgs', 'codeact-demo-net'], capture_output=True, text=True)`,
      "print('pip exit', p.returncode, p.stderr[-300:])",
      "sys.path.insert(0, 'pkgs')",
      'import codeact_demo_net',
      "print('answer', codeact_demo_net.answer())",
    ].join('\n');
    const r = await run(provider, uniqueSessionKey('net-pip'), code);
    assert.equal(r.text, `stdout:\npip exit 0 \nanswer 42\n\n${TOLD_LISTS}`);
    assert.deepEqual(r.network?.connections.map(brief), [
      ['CONNECT', `${NAMES.index}:443`, 'allowed'],
    ]);
  });

  it('applies a changed list to the next call, and the old proxy goes with its last sandbox', async function () {
    let network = networkOf([NAMES.web]);
    const provider = providerFor(() => testSpec({ network }));
    const session = uniqueSessionKey('net-changed');
    const code = `${prelude(internet.caPem)}\nshow('http://${NAMES.web}/', 'http://${NAMES.other}/')`;
    const first = await run(provider, session, code);
    assert.deepEqual(first.network?.connections.map(brief), [
      ['GET', `${NAMES.web}:80`, 'allowed'],
      ['GET', `${NAMES.other}:80`, 'not listed'],
    ]);
    const firstNetwork = await networkModeOf(first.sandboxId);
    const firstProxy = await proxyOf(first.sandboxId, network);
    network = networkOf([NAMES.other]);
    const second = await run(provider, session, code);
    assert.deepEqual(second.network?.connections.map(brief), [
      ['GET', `${NAMES.web}:80`, 'not listed'],
      ['GET', `${NAMES.other}:80`, 'allowed'],
    ]);
    assert.notEqual(second.sandboxId, first.sandboxId);
    const secondProxy = await proxyOf(second.sandboxId, network);
    assert.notEqual(secondProxy, firstProxy);
    assert.equal(await exists(firstProxy), false, 'the first list\'s proxy is removed with its sandbox');
    if (TEST_ENGINE === 'docker') assert.equal(await dockerCli('network', 'ls', '-q', '--filter', `name=^${firstNetwork}$`), '');
    const secondNetwork = await networkModeOf(second.sandboxId);
    await provider.dispose();
    assert.equal(await exists(secondProxy), false, 'the proxy goes with the last sandbox');
    if (TEST_ENGINE === 'docker') assert.equal(await dockerCli('network', 'ls', '-q', '--filter', `name=^${secondNetwork}$`), '');
  });

  it('shares one proxy between windows with the same lists; the last sandbox takes it, and cleanup what a crash left', async function () {
    if (TEST_ENGINE !== 'docker') this.skip();
    const network = networkOf([NAMES.web]);
    const names = egressNames(network);
    const one = providerFor(() => testSpec({ network }));
    const two = providerFor(() => testSpec({ network }));
    const code = `${prelude(internet.caPem)}\nshow('http://${NAMES.web}/')`;
    const first = await run(one, uniqueSessionKey('net-one'), code);
    const proxyId = (await docker.getContainer(names.proxy).inspect()).Id;
    const second = await run(two, uniqueSessionKey('net-two'), code);
    const [firstNetwork, secondNetwork] = [await networkModeOf(first.sandboxId), await networkModeOf(second.sandboxId)];
    assert.notEqual(firstNetwork, secondNetwork, 'each sandbox has a network of its own');
    assert.equal(second.text, `stdout:\nhttp://${NAMES.web}/ -> ${NAMES.web} / http\n\n${TOLD(NAMES.web)}`);
    assert.equal((await docker.getContainer(names.proxy).inspect()).Id, proxyId, 'the second window found the first one\'s proxy');
    await one.dispose();
    assert.equal(await dockerCli('network', 'ls', '-q', '--filter', `name=^${firstNetwork}$`), '', 'a sandbox\'s network goes with it');
    assert.equal(await exists(names.proxy), true, 'kept while the other window\'s sandbox is on its network');
    // A window that crashed: its sandbox goes by cleanup's hand, not its own.
    await removeQuietly(docker, second.sandboxId, undefined, log);
    assert.equal(await releaseIdleEgress(docker, log), 1);
    assert.equal(await exists(names.proxy), false);
    assert.equal(await dockerCli('network', 'ls', '-q', '--filter', `name=^${secondNetwork}$`), '');
  });

  it('gives each sandbox its own proxy on Podman, gone with it, and cleanup takes one a crash left', async function () {
    if (TEST_ENGINE !== 'podman') this.skip();
    const network = networkOf([NAMES.web]);
    const one = providerFor(() => testSpec({ network }));
    const two = providerFor(() => testSpec({ network }));
    const code = `${prelude(internet.caPem)}\nshow('http://${NAMES.web}/')`;
    const first = await run(one, uniqueSessionKey('net-one'), code);
    const second = await run(two, uniqueSessionKey('net-two'), code);
    assert.equal(second.text, `stdout:\nhttp://${NAMES.web}/ -> ${NAMES.web} / http\n\n${TOLD(NAMES.web)}`);
    const [p1, p2] = [await proxyOf(first.sandboxId, network), await proxyOf(second.sandboxId, network)];
    assert.notEqual(p1, p2);
    assert.equal((await docker.getContainer(second.sandboxId).inspect()).HostConfig.NetworkMode, `container:${(await docker.getContainer(p2).inspect()).Id}`);
    await one.dispose();
    assert.deepEqual([await exists(p1), await exists(p2)], [false, true]);
    // A window that crashed: its sandbox goes by cleanup's hand, not its own.
    await removeQuietly(docker, second.sandboxId, undefined, log);
    assert.equal(await releaseIdleEgress(docker, log), 1);
    assert.equal(await exists(p2), false);
  });

  it('brings a proxy killed between calls back, and says so when it dies during one', async function () {
    if (TEST_ENGINE !== 'docker') this.skip();
    const network = networkOf([NAMES.web]);
    const provider = providerFor(() => testSpec({ network }));
    const session = uniqueSessionKey('net-killed');
    const names = egressNames(network);
    const code = `${prelude(internet.caPem)}\nshow('http://${NAMES.web}/')`;
    const first = await run(provider, session, code);
    assert.equal(first.text, `stdout:\nhttp://${NAMES.web}/ -> ${NAMES.web} / http\n\n${TOLD(NAMES.web)}`);
    await dockerCli('kill', names.proxy);
    const second = await run(provider, session, code);
    assert.equal(second.text, `stdout:\nhttp://${NAMES.web}/ -> ${NAMES.web} / http`);
    assert.equal(second.sandboxId, first.sandboxId);
    assert.match(recentLog(), new RegExp(`network proxy ${names.proxy} was not running \\(exited\\); starting a new one`));
    // Killed while the program runs: the program finds out, and the model is told.
    await killedDuringRun(provider, session, names.proxy, "The sandbox's network proxy stopped during the run, so the program may have lost its connections; the next call starts it again.");
  });

  it('replaces a sandbox whose own proxy was killed on Podman, and says so when it dies during a call', async function () {
    if (TEST_ENGINE !== 'podman') this.skip();
    const network = networkOf([NAMES.web]);
    const provider = providerFor(() => testSpec({ network }));
    const session = uniqueSessionKey('net-killed');
    const code = `${prelude(internet.caPem)}\nshow('http://${NAMES.web}/')`;
    const first = await run(provider, session, code);
    const firstProxy = await proxyOf(first.sandboxId, network);
    await dockerCli('kill', firstProxy);
    const second = await run(provider, session, code);
    assert.equal(
      second.text,
      `stdout:\nhttp://${NAMES.web}/ -> ${NAMES.web} / http\n\n${TOLD(NAMES.web)}\n\nThe sandbox had stopped and was replaced; files written by earlier calls are gone.`,
    );
    assert.notEqual(second.sandboxId, first.sandboxId);
    assert.deepEqual([await exists(first.sandboxId), await exists(firstProxy)], [false, false]);
    await killedDuringRun(provider, session, await proxyOf(second.sandboxId, network), "The sandbox's network proxy stopped during the run, so the program may have lost its connections; the next call starts a new sandbox with a new proxy.");
  });

  it('runs a sandbox with an allow-list under the default runtime when auto would take gVisor, and refuses gVisor by name', async function () {
    if (TEST_ENGINE !== 'docker') this.skip();
    const info = (await docker.info()) as { Runtimes?: Record<string, unknown> };
    if (!info.Runtimes?.runsc) this.skip();
    const network = networkOf([NAMES.web]);
    const auto = providerFor(() => testSpec({ runtime: 'auto', network }));
    const r = await run(auto, uniqueSessionKey('net-auto'), `${prelude(internet.caPem)}\nshow('http://${NAMES.web}/')`);
    assert.equal(r.text, `stdout:\nhttp://${NAMES.web}/ -> ${NAMES.web} / http\n\n${TOLD(NAMES.web)}`);
    assert.notEqual((await docker.getContainer(r.sandboxId).inspect()).HostConfig.Runtime, 'runsc');
    await auto.dispose();
    // Registered with its own network stack or without: by name, refused in a sentence.
    const named = providerFor(() => testSpec({ runtime: 'runsc', network }));
    await assert.rejects(run(named, uniqueSessionKey('net-named-runsc'), 'print(1)'), { code: 'invalid_settings' });
  });

  it('refuses an allow-list under a runtime registered without network, in one sentence', async function () {
    if (TEST_ENGINE !== 'docker') this.skip();
    const info = (await docker.info()) as { Runtimes?: Record<string, { runtimeArgs?: string[] }> };
    // This machine's kind registers runsc with --network=none (it refuses runsc's network otherwise).
    if (!info.Runtimes?.runsc?.runtimeArgs?.includes('--network=none')) this.skip();
    const provider = providerFor(() => testSpec({ runtime: 'runsc', network: networkOf([NAMES.web]) }));
    await assert.rejects(run(provider, uniqueSessionKey('net-runsc'), 'print(1)'), {
      code: 'invalid_settings',
      message:
        'The sandbox runtime runsc is registered with the engine with --network=none, so a sandbox with a network allow-list cannot run under it, and the program was not run. ' +
        'Ask the user to register runsc without --network=none (see the README\'s "Network" section), to set the runtime setting to runc, or to empty the network allow-list.',
    });
  });
});
