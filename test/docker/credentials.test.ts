/**
 * Credentials the proxy adds for bound hosts, on a real engine, against the tests' own HTTPS
 * servers (fixtures/testInternet.ts: their own test CA, names only the tests' proxy resolves). The
 * secret is a throwaway value made here; every test also looks for it where it must never be.
 */
import * as assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { networkPolicy, type Connection } from '../../src/core/network';
import { parseBindings, standInsFor, strictPercent, type CredentialBinding, type CredentialValues, type WrittenBinding } from '../../src/core/credentials';
import type { SandboxNetwork } from '../../src/docker/container/spec';
import { LABEL } from '../../src/docker/container/labels';
import { withDeadline } from '../../src/docker/engine';
import { NAMES, startTestInternet, type TestInternet } from './fixtures/testInternet';
import { TEST_ENGINE, dockerCli, run, testSpec, uniqueSessionKey, useDocker } from './helpers';

const BOUND = NAMES.api; // api.sub.codeact.test
const TOLD =
  'This sandbox has network access to these domains only: *.sub.codeact.test, web.codeact.test, on ports 80 and 443, through a proxy that urllib, requests, pip and curl use by themselves (HTTP_PROXY and HTTPS_PROXY are set). Every other name is refused.';
/** What the model is told of a sandbox's credentials, after TOLD (core/credentials/note.ts). */
const CREDENTIALS_TOLD = (scope: string, standIn = '') =>
  `The proxy adds the user's credentials to HTTPS requests on their way out, for: ${BOUND} (${scope}). Call those hosts without a key: the program cannot read the value and needs none.${standIn}`;
const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const EMPTY = sha('');

/** Python: get(url, headers) with the default trust (SSL_CERT_FILE and friends), saying what came back. */
const PRELUDE = [
  'import os, socket, ssl, urllib.error, urllib.request',
  'def get(url, headers=None, method=None, context=None):',
  '    try:',
  '        req = urllib.request.Request(url, headers=headers or {}, method=method)',
  '        with urllib.request.urlopen(req, timeout=20, context=context) as r:',
  '            return r.read().decode()',
  '    except urllib.error.HTTPError as e:',
  "        return f'HTTP {e.code}'",
  '    except Exception as e:',
  "        return f'{type(e).__name__}: {getattr(e, \"reason\", e)}'",
].join('\n');

/**
 * Python: exchange(request bytes) sends one request inside a TLS tunnel to the bound host through
 * the proxy and returns all it got back; raw(request) returns its status line.
 */
const RAW = [
  "PROXY_HOST = os.environ['HTTPS_PROXY'].split('//')[1].split(':')[0]",
  'def raw(request, host=None):',
  "    return exchange(request, host).split(b'\\r\\n')[0].decode()",
  'def exchange(request, host=None):',
  `    host = host or ${JSON.stringify(BOUND)}`,
  '    s = socket.create_connection((PROXY_HOST, 3128), timeout=20)',
  "    s.sendall(f'CONNECT {host}:443 HTTP/1.1\\r\\nHost: {host}:443\\r\\n\\r\\n'.encode())",
  '    s.recv(4096)',
  '    t = ssl.create_default_context().wrap_socket(s, server_hostname=host)',
  '    t.sendall(request)',
  '    out = b""',
  '    while True:',
  '        d = t.recv(65536)',
  '        if not d:',
  '            break',
  '        out += d',
  '    return out',
].join('\n');

/** A store of values the test controls: read counts, so a test can show a value was read only to start a proxy. */
class TestValues implements CredentialValues {
  readonly values = new Map<string, string>();
  generation = randomBytes(4).toString('hex');
  async read(secret: string): Promise<string | undefined> {
    return this.values.get(secret);
  }
}

describe('credentials added by the proxy (integration)', function () {
  this.timeout(300_000);
  let internet: TestInternet;
  const secret = `test-secret-${randomBytes(12).toString('hex')}`;
  before(async function () {
    internet = await startTestInternet();
  });
  after(async function () {
    await internet?.stop();
  });
  const sandboxes = useDocker();

  function bindings(...written: WrittenBinding[]): CredentialBinding[] {
    const parsed = parseBindings(written, 'test');
    assert.deepEqual(parsed.problems, []);
    return parsed.bindings;
  }

  function networkWith(b: CredentialBinding[], values: TestValues, standIns = standInsFor(b)): SandboxNetwork {
    const { policy } = networkPolicy([NAMES.web, '*.sub.codeact.test'], []);
    return {
      policy: policy!,
      testing: { ...internet.testing, upstreamCa: internet.caPem },
      ...(b.length ? { credentials: { bindings: b, standIns, values } } : {}),
    };
  }

  /** Everything the engine shows of every container of this test run: the value must be in none of it. */
  async function engineViews(): Promise<string> {
    const ids = (await dockerCli('ps', '-aq', '--filter', `label=${LABEL.managed}`)).split('\n').filter(Boolean);
    const views = await Promise.all(ids.map(async (id) => [await dockerCli('inspect', id), await dockerCli('logs', id).catch((e: Error) => e.message)].join('\n')));
    return views.join('\n');
  }

  it('adds the credential on HTTPS to its bound host, in place of the header the program set, and masks it where a server echoes it', async function () {
    const values = new TestValues();
    values.values.set('api', secret);
    const network = networkWith(bindings({ secret: 'api', hosts: [BOUND] }), values);
    const provider = sandboxes.makeProvider({ spec: () => testSpec({ network }) });
    const r = await run(
      provider,
      uniqueSessionKey('cred-added'),
      [
        PRELUDE,
        `print(get('https://${BOUND}/digest'))`,
        `print(get('https://${BOUND}/digest', {'Authorization': 'Bearer mine'}))`,
        `print(get('https://${BOUND}/echo', {'Authorization': 'Bearer mine'}).splitlines()[1:])`,
        // Not bound: tunnelled as ever, so the server's own certificate (the test CA's) is what the program sees.
        `open('test-ca.pem', 'w').write(${JSON.stringify('CA')})`.replace('"CA"', JSON.stringify(internet.caPem)),
        `print(get('https://${NAMES.web}/digest', context=ssl.create_default_context(cafile='test-ca.pem')))`,
      ].join('\n'),
    );
    const lines = r.text.split('\n');
    assert.equal(lines[1], `1 ${sha(`Bearer ${secret}`)} 0 ${EMPTY}`);
    assert.equal(lines[2], `1 ${sha(`Bearer ${secret}`)} 0 ${EMPTY}`);
    // The echo's own line order is the server's; the credential's line comes back masked.
    assert.ok(lines[3]!.includes(`'Authorization: Bearer ${'*'.repeat(secret.length)}'`), lines[3]);
    assert.ok(lines[3]!.includes(`'Accept-Encoding: identity'`), lines[3]);
    // Not bound: nothing added.
    assert.equal(lines[4], `0 ${EMPTY} 0 ${EMPTY}`);
    const brief = (c: Connection) => [c.method, c.host, c.allowed ? 'allowed' : c.reason, c.credential === true];
    assert.deepEqual(r.network?.connections.map(brief), [
      ['GET', BOUND, 'allowed', true],
      ['CONNECT', BOUND, 'allowed', false],
      ['GET', BOUND, 'allowed', true],
      ['CONNECT', BOUND, 'allowed', false],
      ['GET', BOUND, 'allowed', true],
      ['CONNECT', BOUND, 'allowed', false],
      ['CONNECT', NAMES.web, 'allowed', false],
    ]);
    assert.ok(!JSON.stringify(r).includes(secret), 'the value is in the result or record');
    assert.ok(!(await engineViews()).includes(secret), 'the value is in an inspect or log of a container');
  });

  it("gives an attacker's program nothing: no value anywhere it can look, no plain HTTP, no smuggling, no other host, no way around squid", async function () {
    const values = new TestValues();
    values.values.set('api', secret);
    const network = networkWith(bindings({ secret: 'api', hosts: [BOUND], paths: ['/digest', '/echo'] }), values);
    const provider = sandboxes.makeProvider({ spec: () => testSpec({ network }) });
    const reversed = [...secret].reverse().join('');
    const attack = [
      PRELUDE,
      RAW,
      // The value, spelled backwards in this file so that finding the program itself proves nothing.
      `needle = ${JSON.stringify(reversed)}[::-1].encode()`,
      'found = []',
      'for k, v in os.environ.items():',
      '    if needle in f"{k}={v}".encode():',
      "        found.append('environ')",
      "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:",
      "    for what in ('environ', 'cmdline', 'status'):",
      '        try:',
      "            if needle in open(f'/proc/{pid}/{what}', 'rb').read():",
      "                found.append(f'/proc/{pid}/{what}')",
      '        except OSError:',
      '            pass',
      "for top in [d for d in os.listdir('/') if d not in ('proc', 'sys', 'dev')]:",
      "    for root, dirs, files in os.walk('/' + top):",
      '        for f in files:',
      '            p = os.path.join(root, f)',
      '            try:',
      '                if os.path.isfile(p) and not os.path.islink(p) and os.path.getsize(p) < 8 << 20 and needle in open(p, "rb").read():',
      '                    found.append(p)',
      '            except OSError:',
      '                pass',
      "print('found:', found)",
      // squid's own forwarder, straight: the firewall lets only squid's user reach it.
      'try:',
      "    socket.create_connection(('127.0.0.1', 3129), timeout=5).close()",
      "    print('forwarder: reached')",
      'except OSError as e:',
      "    print('forwarder: errno', e.errno)",
      `print('plain:', get('http://${BOUND}/digest'))`,
      `print('second host:', raw(b'GET /digest HTTP/1.1\\r\\nHost: ${BOUND}\\r\\nHost: ${NAMES.web}\\r\\n\\r\\n'))`,
      `print('other host:', raw(b'GET /digest HTTP/1.1\\r\\nHost: ${NAMES.web}\\r\\n\\r\\n'))`,
      `print('absolute:', raw(b'GET https://${NAMES.web}/digest HTTP/1.1\\r\\nHost: ${BOUND}\\r\\n\\r\\n'))`,
      `print('folded:', raw(b'GET /digest HTTP/1.1\\r\\nHost: ${BOUND}\\r\\nX-A: 1\\r\\n  2\\r\\n\\r\\n'))`,
      `print('bare LF:', raw(b'GET /digest HTTP/1.1\\nHost: ${BOUND}\\n\\n'))`,
      `print('two lengths:', raw(b'POST /digest HTTP/1.1\\r\\nHost: ${BOUND}\\r\\nContent-Length: 3\\r\\nContent-Length: 30\\r\\n\\r\\nabc'))`,
      `print('length and chunked:', raw(b'POST /digest HTTP/1.1\\r\\nHost: ${BOUND}\\r\\nContent-Length: 3\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n'))`,
      `print('dot segment:', raw(b'GET /digest/../admin HTTP/1.1\\r\\nHost: ${BOUND}\\r\\n\\r\\n'))`,
      `print('outside its paths:', get('https://${BOUND}/other'))`,
      'try:',
      "    s = socket.create_connection((PROXY_HOST, 3128), timeout=20)",
      `    s.sendall(b'CONNECT ${BOUND}:443 HTTP/1.1\\r\\nHost: ${BOUND}:443\\r\\n\\r\\n')`,
      '    s.recv(4096)',
      '    c = ssl.create_default_context()',
      '    c.check_hostname = False',
      `    t = c.wrap_socket(s, server_hostname=${JSON.stringify(NAMES.web)})`,
      `    t.sendall(b'GET /digest HTTP/1.1\\r\\nHost: ${BOUND}\\r\\n\\r\\n')`,
      "    print('other hello:', t.recv(100) or b'closed')",
      'except Exception as e:',
      "    print('other hello:', type(e).__name__)",
    ].join('\n');
    const r = await run(provider, uniqueSessionKey('cred-attacker'), attack);
    assert.equal(
      r.text,
      [
        'stdout:',
        'found: []',
        'forwarder: errno 111',
        'plain: HTTP 403',
        'second host: HTTP/1.1 400 Refused',
        'other host: HTTP/1.1 421 Refused',
        'absolute: HTTP/1.1 421 Refused',
        'folded: HTTP/1.1 400 Refused',
        'bare LF: HTTP/1.1 400 Refused',
        'two lengths: HTTP/1.1 400 Refused',
        'length and chunked: HTTP/1.1 400 Refused',
        'dot segment: HTTP/1.1 400 Refused',
        // Its host, outside the binding's paths: passed on without the credential.
        `outside its paths: ${BOUND} /other https`,
        "other hello: b'closed'",
        '',
        TOLD,
        '',
        CREDENTIALS_TOLD('as Authorization: Bearer; paths /digest, /echo'),
        '',
        `The sandbox's network proxy blocked: ${BOUND} (a credential is bound to it, so only HTTPS goes there), ` +
          `${BOUND} (a request that could be read two ways: a second Host header, a folded header, conflicting lengths, a dot segment or an upgrade), ` +
          `${BOUND} (the TLS hello named another server). Do not try to get around the proxy: nothing else leaves the sandbox.`,
      ].join('\n'),
    );
    const verdicts = r.network!.connections.filter((c) => c.method !== 'CONNECT' || !c.allowed).map((c) => [c.method, c.allowed ? 'allowed' : c.reason, c.credential === true]);
    assert.deepEqual(verdicts, [
      ['GET', 'not https', false],
      ...[['GET'], ['GET'], ['GET'], ['-'], ['-'], ['POST'], ['POST'], ['GET']].map(([m]) => [m, 'malformed', false]),
      ['GET', 'allowed', false],
      ['CONNECT', 'sni', false],
    ]);
    assert.ok(!(await engineViews()).includes(secret), 'the value is in an inspect or log of a container');
  });

  it("holds against a second attacker: a query value's odd characters, path disguises, a flood of connections, a stand-in in a cookie, a forwarder killed", async function () {
    const values = new TestValues();
    // The characters encodeURIComponent leaves as they are: the value was sent encoded one way and masked in another.
    const odd = `${secret}!(x)*'y`;
    values.values.set('q', odd);
    values.values.set('api', secret);
    const network = networkWith(
      bindings({ secret: 'q', hosts: [NAMES.denied], as: 'query', name: 'key' }, { secret: 'api', hosts: [BOUND], paths: ['/digest'], placeholder: 'API_KEY' }),
      values,
    );
    const provider = sandboxes.makeProvider({ spec: () => testSpec({ network }) });
    const session = uniqueSessionKey('cred-second');
    const disguises = ['/digest/..;/other', '/digest/%252e%252e/other', '/digest/%c0%ae%c0%ae/other', '/digest/..%00/other', '/digest/..%09/other', '/digest/.../other'];
    const attack = [
      PRELUDE,
      RAW,
      `echo = exchange(b'GET /echo?a=1 HTTP/1.1\\r\\nHost: ${NAMES.denied}\\r\\nConnection: close\\r\\n\\r\\n', ${JSON.stringify(NAMES.denied)})`,
      "print('query echo:', echo.split(b'\\r\\n\\r\\n', 1)[1].splitlines()[0].decode())",
      `for p in ${JSON.stringify(disguises)}:`,
      `    print(p, raw(f'GET {p}?h=Authorization HTTP/1.1\\r\\nHost: ${BOUND}\\r\\nConnection: close\\r\\n\\r\\n'.encode()))`,
      // 90 tunnels at once: one thread each would pass the proxy container's 64 tasks and end the forwarder.
      'held = []',
      'for i in range(90):',
      '    s = socket.create_connection((PROXY_HOST, 3128), timeout=30)',
      `    s.sendall(b'CONNECT ${BOUND}:443 HTTP/1.1\\r\\nHost: ${BOUND}:443\\r\\n\\r\\n')`,
      '    held.append(s)',
      // The forwarder answers as many as it has slots for, in whatever order squid passes them on;
      // past that, 3 s in which none more may be answered (none of the held ones ends, so none frees a slot).
      'import collections, select',
      'said = {}',
      'while len(said) < 32:',
      '    ready = select.select([s for s in held if s not in said], [], [], 60)[0]',
      '    if not ready:',
      '        break',
      '    said.update((s, s.recv(100)[:12]) for s in ready)',
      'said.update((s, s.recv(100)[:12]) for s in select.select([s for s in held if s not in said], [], [], 3)[0])',
      "print('tunnels answered while 90 were held:', sorted(collections.Counter(said.values()).items()))",
      'for s in held:',
      '    s.close()',
      `print('after the flood:', get('https://${BOUND}/digest'))`,
      `print('stand-in in a cookie:', get('http://${NAMES.web}/digest', {'Cookie': 'k=' + os.environ['API_KEY']}))`,
    ].join('\n');
    const r = await run(provider, session, attack);
    const bearer = `1 ${sha(`Bearer ${secret}`)} 0 ${EMPTY}`;
    const sent = `/echo?a=1&key=${'*'.repeat(strictPercent(odd).length)}`;
    assert.equal(
      r.text.split('\n\n')[0],
      [
        'stdout:',
        `query echo: ${sent}`,
        ...disguises.map((p) => `${p} HTTP/1.1 400 Refused`),
        "tunnels answered while 90 were held: [(b'HTTP/1.1 200', 32)]",
        `after the flood: ${bearer}`,
        'stand-in in a cookie: HTTP 403',
      ].join('\n'),
    );
    assert.ok(!r.text.includes(secret), 'the value (or its start) is in the output');

    // The forwarder ended from inside its container (as its own user could): the container ends with it.
    const proxy = (JSON.parse(await dockerCli('inspect', '--format', '{{json .Config.Labels}}', r.sandboxId)) as Record<string, string>)[LABEL.proxy]!;
    await dockerCli('exec', '-u', String(990), proxy, 'sh', '-c', 'kill -9 -1');
    assert.equal((await withDeadline(dockerCli('wait', proxy), 60_000, 'wait for the proxy to end')).trim(), '1');
    const next = await run(provider, session, [PRELUDE, `print(get('https://${BOUND}/digest'))`].join('\n'));
    assert.notEqual(next.sandboxId, r.sandboxId);
    assert.equal(next.text.split('\n\n')[0], `stdout:\n${bearer}`);
    assert.ok(!(await engineViews()).includes(secret), 'the value is in an inspect or log of a container');
  });

  it('swaps a stand-in on its bound host only, refuses it anywhere else, leaves no CA key anywhere, and drops a removed binding at the next call', async function () {
    const values = new TestValues();
    values.values.set('key', secret);
    const bound = bindings({ secret: 'key', hosts: [BOUND], paths: ['/digest'], as: 'header', name: 'X-Api-Key', placeholder: 'API_KEY' });
    const withBinding = networkWith(bound, values);
    let network = withBinding;
    const provider = sandboxes.makeProvider({ spec: () => testSpec({ network }) });
    const session = uniqueSessionKey('cred-stand-in');
    const program = [
      PRELUDE,
      "key = os.environ.get('API_KEY', '')",
      "print('stand-in:', key.startswith('codeact-stand-in-'), len(key))",
      `print('bound:', get('https://${BOUND}/digest?h=X-Api-Key', {'X-Api-Key': key}))`,
      `print('outside its paths:', get('https://${BOUND}/echo', {'X-Api-Key': key}))`,
      `print('other host:', get('http://${NAMES.web}/digest?h=X-Api-Key', {'X-Api-Key': key}))`,
      `print('in a URL:', get('http://${NAMES.web}/digest?key=' + key))`,
    ].join('\n');
    const r = await run(provider, session, program);
    assert.equal(
      r.text,
      [
        'stdout:',
        'stand-in: True 53',
        `bound: 1 ${sha(secret)} 0 ${EMPTY}`,
        'outside its paths: HTTP 403',
        'other host: HTTP 403',
        'in a URL: HTTP 403',
        '',
        TOLD,
        '',
        CREDENTIALS_TOLD('in the X-Api-Key header; paths /digest; a stand-in key in $API_KEY', ' Where a library insists on a key, give it the stand-in from its variable: the proxy swaps it on that host alone.'),
        '',
        `The sandbox's network proxy blocked: ${BOUND} (a placeholder's stand-in sent where its credential is not bound), ${NAMES.web} (a placeholder's stand-in sent where its credential is not bound). Do not try to get around the proxy: nothing else leaves the sandbox.`,
      ].join('\n'),
    );
    assert.deepEqual(
      r.network!.connections.filter((c) => c.method !== 'CONNECT').map((c) => [c.method, c.host, c.allowed ? 'allowed' : c.reason, c.credential === true]),
      [
        ['GET', BOUND, 'allowed', true],
        ['GET', BOUND, 'stand-in', false],
        ['GET', NAMES.web, 'stand-in', false],
        ['GET', NAMES.web, 'stand-in', false],
      ],
    );

    // Every private key the proxy's users can read: the leaf's alone, never the CA's.
    const sandbox = await dockerCli('inspect', '--format', '{{json .Config.Labels}}', r.sandboxId);
    const labels = JSON.parse(sandbox) as Record<string, string>;
    const proxy = labels[LABEL.proxy]!;
    const caPem = Buffer.from(labels[LABEL.credentialCa]!, 'base64').toString();
    const scan = [
      // Regular files only (a fifo would block a read), on every mount but the kernel's.
      "for f in $(find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -type f -size -2M -print 2>/dev/null | xargs grep -lE -- '-----BEGIN (EC |RSA )?PRIVATE KEY-----' 2>/dev/null); do",
      '  openssl pkey -in "$f" -pubout 2>/dev/null || true',
      'done',
    ].join('\n');
    const keys = new Set<string>();
    for (const user of ['0', '13', '990']) {
      for (const k of (await dockerCli('exec', '-u', user, proxy, 'sh', '-c', scan)).split(/(?=-----BEGIN PUBLIC KEY-----)/)) if (k.trim()) keys.add(k.trim());
    }
    const caKey = (await dockerCli('exec', '-i', proxy, 'sh', '-c', `printf '%s' '${caPem.trim()}' | openssl x509 -pubkey -noout`)).trim();
    const pub = async (user: string, pem: string) => (await dockerCli('exec', '-u', user, proxy, 'sh', '-c', `openssl x509 -in ${pem} -pubkey -noout`)).trim();
    // The forwarder's leaf, and the key squid's TLS port must have (it only peeks, never signs).
    const expected = [await pub('990', '/run/codeact-credentials/forwarder-*/leaf.pem'), await pub('13', '/run/codeact-proxy/peek.pem')];
    assert.deepEqual([...keys].sort(), expected.sort());
    assert.ok(!keys.has(caKey) && !expected.includes(caKey), 'the CA key is still in the proxy container');
    // Nothing was written to the proxy's own layer (its root is read-only): the engine made only its
    // tmpfs mount points (and, on Podman, the mounts of /etc's hosts and resolv.conf).
    const mountPoints = new Set(['C /run', 'A /run/codeact-credentials', 'A /run/codeact-proxy', ...(TEST_ENGINE === 'podman' ? ['C /etc'] : [])]);
    assert.deepEqual((await dockerCli('diff', proxy)).split('\n').filter((l) => l.trim() && !mountPoints.has(l.trim())), []);
    assert.ok(!(await engineViews()).includes(secret), 'the value is in an inspect or log of a container');

    // The binding removed: the next call gets a sandbox and proxy without it.
    network = networkWith([], values);
    const after = await run(
      provider,
      session,
      [
        PRELUDE,
        "print(os.environ.get('API_KEY'))",
        `open('test-ca.pem', 'w').write(${JSON.stringify(internet.caPem)})`,
        `print(get('https://${BOUND}/digest?h=X-Api-Key', {'X-Api-Key': 'mine'}, context=ssl.create_default_context(cafile='test-ca.pem')))`,
      ].join('\n'),
    );
    assert.notEqual(after.sandboxId, r.sandboxId);
    // Tunnelled as to any host: the server's own certificate, and the program's own header, untouched.
    assert.equal(after.text, `stdout:\nNone\n1 ${sha('mine')} 0 ${EMPTY}\n\n${TOLD}`);
  });
});
