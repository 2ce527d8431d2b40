import * as assert from 'node:assert/strict';
import { sandboxNetworkName } from '../../../src/docker/network/egress';
import { CallRecord } from '../../../src/docker/network/callRecord';
import { proxyImageContext, proxyImageTag, proxyPeriod } from '../../../src/docker/images/proxyImage';
import { CappedConnections, MAX_RECORDED_BLOCKED, MAX_RECORDED_CONNECTIONS, RECORDED_FIRST, RECORDED_HOSTS_ALLOWED, RECORDED_HOSTS_BLOCKED, RECORDED_LAST, blockedNote, connectionLine, networkPolicy, networkSummary, type Connection } from '../../../src/core/network';
import { hostAddress, proxyEnv } from '../../../src/docker/network/egress';
import { parseLogLine } from '../../../src/docker/network/accessLog';
import { argsWithoutNetwork } from '../../../src/docker/engine/runtime';
import { patternRegex, squidConfig } from '../../../src/docker/network/squidConfig';
import { proxyContainerOptions } from '../../../src/docker/network/proxyContainer';

const policy = networkPolicy(['index.example.org', '*.files.example.net', 'INDEX.example.org'], ['bad.files.example.net']).policy!;

describe('network proxy (pure parts)', function () {
  it('keeps one canonical policy: sorted, deduplicated, lower case', function () {
    assert.deepEqual(policy, { allow: ['*.files.example.net', 'index.example.org'], deny: ['bad.files.example.net'] });
    assert.equal(networkPolicy(['https://index.example.org'], []).policy, undefined);
    assert.equal(networkPolicy([], ['index.example.org']).policy, undefined);
  });

  it('writes a name as an anchored regex and a *. pattern as a suffix', function () {
    assert.equal(patternRegex('index.example.org'), '^index\\.example\\.org$');
    assert.equal(patternRegex('*.files.example.net'), '\\.files\\.example\\.net$');
  });

  it('configures squid to refuse before it allows, and to splice only allowed TLS hellos', function () {
    const text = squidConfig({ policy, clients: { except: ['172.17.0.0/16', 'fd00:1::/64'] } });
    const rules = text.split('\n').filter((l) => l.startsWith('http_access') || l.startsWith('ssl_bump'));
    assert.deepEqual(rules, [
      'http_access deny outside why_source',
      'http_access deny manager why_scheme',
      'http_access deny mark why_mark',
      'http_access deny !CONNECT !http_scheme why_scheme',
      'http_access deny CONNECT !tls_port why_tunnel_port',
      'http_access deny !CONNECT !web_port why_port',
      'http_access deny CONNECT denied why_tunnel_denied',
      'http_access deny denied why_denied',
      'http_access deny CONNECT !allowed why_tunnel_unlisted',
      'http_access deny !allowed why_unlisted',
      'http_access deny CONNECT never_reached why_tunnel_private',
      'http_access deny never_reached why_private',
      'http_access allow all why_allowed',
      'ssl_bump peek step1',
      'ssl_bump splice hello_allowed !hello_denied',
      'ssl_bump terminate all why_sni',
    ]);
    // Docker: the proxy joins each sandbox's network as it is made; it serves no one on its outside network.
    assert.ok(text.includes('\nacl outside src 172.17.0.0/16 fd00:1::/64\n'));
    assert.ok(text.includes('\nacl allowed dstdom_regex -n -i \\.files\\.example\\.net$ ^index\\.example\\.org$\n'));
    assert.ok(text.includes('\nacl denied dstdom_regex -n -i ^bad\\.files\\.example\\.net$\n'));
    assert.ok(!text.includes('test_reachable'), 'only tests name reachable private addresses');
    // A name ACL without -n would look an address up backwards: a DNS query the program chose.
    const nameAcls = text.split('\n').filter((l) => / (dstdomain|dstdom_regex) /.test(l));
    assert.equal(nameAcls.length, 3);
    for (const acl of nameAcls) assert.match(acl, / (dstdomain|dstdom_regex) -n /, acl);
    // The client hello's server name is logged escaped: it cannot split a log line.
    assert.match(text, / %#\.256>rd .* %#\.256ssl::>sni\n/);
    const testing = squidConfig({ policy, clients: { except: ['172.17.0.0/16'] }, reachable: ['172.21.0.2/32'] });
    assert.ok(testing.includes('\nacl test_reachable dst 172.21.0.2/32\n'));
    assert.ok(testing.includes('\nhttp_access allow test_reachable why_allowed\nhttp_access deny CONNECT never_reached why_tunnel_private\n'));
  });

  it('reads connections from the access log, and skips what is not one', function () {
    // `rest`: method host port status bytes-in bytes-out verdict reason bump sni; the server address goes before the sni.
    const line = (rest: string, server = '-', clientPort = 51000) => {
      const f = rest.split(' ');
      return `codeact-net 1796212514.437 172.22.0.3 ${clientPort} ${[...f.slice(0, 9), server, ...f.slice(9)].join(' ')}`;
    };
    assert.deepEqual(parseLogLine(line('CONNECT web.example.org 443 500 2209 740 TCP_TUNNEL allowed splice web.example.org', '203.0.113.7')), {
      kind: 'connection',
      client: '172.22.0.3',
      clientPort: 51000,
      connection: { time: 1796212514437, host: 'web.example.org', port: 443, method: 'CONNECT', bytesOut: 740, bytesIn: 2209, sni: 'web.example.org', serverAddress: '203.0.113.7', allowed: true },
    });
    // The acceptance of an allowed tunnel, logged before the tunnel itself (with the same client port): open until then.
    assert.deepEqual(parseLogLine(line('CONNECT web.example.org 443 200 0 61 NONE_NONE allowed splice web.example.org', '203.0.113.7', 51002)), {
      kind: 'tunnel',
      client: '172.22.0.3',
      clientPort: 51002,
      connection: { time: 1796212514437, host: 'web.example.org', port: 443, method: 'CONNECT', bytesOut: 0, bytesIn: 0, sni: 'web.example.org', serverAddress: '203.0.113.7', allowed: true, open: true },
    });
    const blocked = (rest: string) => {
      const e = parseLogLine(line(rest));
      return e?.kind === 'connection' ? [e.connection.allowed, e.connection.reason] : e;
    };
    assert.deepEqual(blocked('CONNECT web.example.org 443 200 0 61 NONE_NONE sni terminate other.example.org'), [false, 'sni']);
    assert.deepEqual(blocked('CONNECT web.example.org 443 200 0 61 NONE_NONE allowed peek -'), [false, 'not tls']);
    assert.deepEqual(blocked('GET 172.21.0.2 80 403 3396 131 TCP_DENIED unlisted - -'), [false, 'address']);
    assert.deepEqual(blocked('GET other.example.org 80 403 3412 147 TCP_DENIED unlisted - -'), [false, 'not listed']);
    assert.deepEqual(blocked('CONNECT loop.example.org 443 200 0 44 TCP_DENIED private - -'), [false, 'private address']);
    assert.deepEqual(blocked('GET web.example.org 8080 403 3412 147 TCP_DENIED port - -'), [false, 'port']);
    assert.deepEqual(blocked('GET web.example.org 80 403 3412 147 TCP_DENIED scheme - -'), [false, 'scheme']);
    const hello = parseLogLine(line('CONNECT web.example.org 443 200 0 61 NONE_NONE sni terminate a%0Ab%20c.example.org'));
    // A crafted server name stays escaped: it cannot add a line, or a look-alike of one, to the record.
    assert.equal(hello?.kind === 'connection' && hello.connection.sni, 'a%0Ab%20c.example.org');
    const fake = parseLogLine(line('CONNECT web.example.org 443 200 0 61 NONE_NONE sni terminate x%0A11:00:00%20GET%20evil.example:80%20allowed'));
    assert.equal(fake?.kind === 'connection' && fake.connection.sni, 'x%0A11:00:00%20GET%20evil.example:80%20allowed');
    const unicode = parseLogLine(line('CONNECT web.example.org 443 200 0 61 NONE_NONE sni terminate %E2%80%AEgro.elpmaxe'));
    assert.equal(unicode?.kind === 'connection' && unicode.connection.sni, '%E2%80%AEgro.elpmaxe');
    // A name the program made long is cut to a domain name's length.
    const long = parseLogLine(line(`GET ${'a'.repeat(300)}.example 80 403 3412 147 TCP_DENIED unlisted - -`));
    assert.equal(long?.kind === 'connection' && long.connection.host, `${'a'.repeat(252)}…`);
    assert.equal(parseLogLine(line('CONNECT web.example.org 443 200 0 61 NONE_NONE sni terminate b.example.org'))?.kind === 'connection', true);
    assert.deepEqual(parseLogLine(line('GET m-0a1b2c.codeact-mark.invalid 80 403 3400 120 TCP_DENIED mark - -')), { kind: 'mark', client: '172.22.0.3', nonce: '0a1b2c', time: 1796212514437 });
    assert.equal(parseLogLine(line('GET web.example.org 80 403 1 1 TCP_DENIED source - -')), undefined);
    assert.equal(parseLogLine('2026/12/02 11:42:41| Accepting SSL bumped HTTP Socket connections'), undefined);
    assert.equal(parseLogLine(line('GET web.example.org')), undefined);
    // A line of the format before the client port and server address: not read as a connection.
    assert.equal(parseLogLine('codeact-net 1796212514.437 172.22.0.3 GET web.example.org 80 200 10 10 TCP_MISS allowed - -'), undefined);
  });

  it('sums a run up, and tells the model which names were blocked and why', function () {
    const c = (host: string, allowed: boolean, reason?: Connection['reason'], port = 443): Connection => ({
      time: Date.UTC(2026, 11, 2, 11, 0, 0, 250),
      host,
      port,
      method: port === 443 ? 'CONNECT' : 'GET',
      allowed,
      ...(reason ? { reason } : {}),
      bytesOut: 10,
      bytesIn: 20,
    });
    const connections = [c('index.example.org', true), c('index.example.org', true), c('other.example.org', false, 'not listed'), c('other.example.org', false, 'not listed', 80), c('loop.example.org', false, 'private address')];
    assert.equal(networkSummary({ connections, complete: true }), 'network: 2 allowed, 3 blocked: other.example.org, loop.example.org');
    assert.equal(networkSummary({ connections: [], complete: false }), 'network: 0 allowed (the record may be incomplete)');
    assert.equal(connectionLine(connections[2]), '11:00:00.250 CONNECT other.example.org:443 blocked (not on the allow-list), 10 bytes out, 20 bytes in');
    assert.equal(
      blockedNote(connections, '--allow-domain'),
      "The sandbox's network proxy blocked: other.example.org (not on the allow-list), loop.example.org (resolves to a private or loopback address). If the program needs a name that is not on the allow-list, ask the user to add it to --allow-domain. Do not try to get around the proxy: nothing else leaves the sandbox.",
    );
    assert.equal(blockedNote([c('index.example.org', true)], '--allow-domain'), undefined);
  });

  it('pins the proxy at the second address of its subnet, and points every proxy variable at it', function () {
    assert.equal(hostAddress('172.22.0.0/16', 2), '172.22.0.2');
    assert.equal(hostAddress('10.0.255.0/24', 258), '10.1.0.2');
    assert.deepEqual(proxyEnv({ proxyAddress: '172.22.0.2' }), [
      'HTTP_PROXY=http://172.22.0.2:3128', 'http_proxy=http://172.22.0.2:3128',
      'HTTPS_PROXY=http://172.22.0.2:3128', 'https_proxy=http://172.22.0.2:3128',
      'ALL_PROXY=http://172.22.0.2:3128', 'all_proxy=http://172.22.0.2:3128',
    ]);
  });

  it('knows a runtime registered without network', function () {
    assert.equal(argsWithoutNetwork(['--network=none']), true);
    assert.equal(argsWithoutNetwork(['--debug', '--network', 'none']), true);
    assert.equal(argsWithoutNetwork(['--network=sandbox']), false);
    assert.equal(argsWithoutNetwork([]), false);
  });

  it("gives the proxy the gate: root with only what the firewall and the change of user take; on Podman loopback only, its namespace's sysctls", function () {
    const { policy } = networkPolicy(['web.example.org'], []);
    const o = proxyContainerOptions({ name: 'p', image: 'i', target: { policy: policy! }, labels: {}, engine: 'podman', clients: { only: '127.0.0.1/32' }, gate: { network: 'podman' } });
    assert.deepEqual([o.User, o.Cmd, o.HostConfig?.NetworkMode, o.HostConfig?.CapDrop, o.HostConfig?.CapAdd], ['0', ['/usr/local/bin/codeact-proxy-gate'], 'podman', ['ALL'], ['NET_ADMIN', 'SETUID', 'SETGID', 'SETPCAP']]);
    assert.deepEqual(o.HostConfig?.Sysctls, { 'net.ipv6.conf.all.disable_ipv6': '1', 'net.ipv6.conf.default.disable_ipv6': '1', 'net.ipv4.ip_unprivileged_port_start': '1024' });
    const conf = (o.Env ?? [])[0];
    assert.ok(conf.includes('\nhttp_port 127.0.0.1:3128 ssl-bump '), conf);
    assert.ok(conf.includes('\nacl sandboxes src 127.0.0.1/32\n'), conf);
    assert.ok(conf.includes('\nhttp_access deny !sandboxes why_source\n'), conf);
    const docker = proxyContainerOptions({ name: 'p', image: 'i', target: { policy: policy! }, labels: {}, engine: 'docker', clients: { except: ['172.17.0.0/16'] }, outside: { network: 'bridge' } });
    // Docker's proxy has the gate too (the kernel's fence for squid's own traffic), without the shared namespace's rules.
    assert.deepEqual(
      [docker.User, docker.Cmd, docker.HostConfig?.CapAdd, docker.HostConfig?.Sysctls, docker.HostConfig?.NetworkMode],
      ['0', ['/usr/local/bin/codeact-proxy-gate'], ['NET_ADMIN', 'SETUID', 'SETGID', 'SETPCAP'], { 'net.ipv6.conf.all.disable_ipv6': '1', 'net.ipv6.conf.default.disable_ipv6': '1' }, 'bridge'],
    );
    assert.deepEqual((docker.Env ?? []).slice(1), [
      'CODEACT_PROXY_NEVER=0.0.0.0/8 10.0.0.0/8 100.64.0.0/10 127.0.0.0/8 169.254.0.0/16 172.16.0.0/12 192.0.0.0/24 192.168.0.0/16 198.18.0.0/15 224.0.0.0/3',
    ]);
    assert.deepEqual((o.Env ?? []).slice(1), [
      'CODEACT_PROXY_NEVER=0.0.0.0/8 10.0.0.0/8 100.64.0.0/10 127.0.0.0/8 169.254.0.0/16 172.16.0.0/12 192.0.0.0/24 192.168.0.0/16 198.18.0.0/15 224.0.0.0/3',
      'CODEACT_PROXY_SHARED=1',
    ]);
    assert.equal(docker.NetworkingConfig, undefined, 'it joins sandbox networks one by one, after it starts');
    // An outside network without a subnet would leave squid serving everyone on it.
    assert.throws(() => proxyContainerOptions({ name: 'p', image: 'i', target: { policy: policy! }, labels: {}, engine: 'docker', clients: { except: [] }, outside: { network: 'bridge' } }), {
      message: "The sandbox's network proxy could not be started (the proxy's outside network has no subnet to keep out), so the program was not run. The next call tries again; if it fails again, ask the user to look at the CodeAct Sandbox log or to empty the network allow-list.",
    });
  });

  it("builds the proxy's image anew each month, so Debian's squid updates reach users; the tag says the month", function () {
    assert.equal(proxyPeriod(new Date(Date.UTC(2026, 11, 31, 23, 59))), '202612');
    assert.equal(proxyPeriod(new Date(Date.UTC(2027, 0, 1, 0, 0))), '202701');
    const december = proxyImageTag('202612');
    const january = proxyImageTag('202701');
    assert.equal(december.recipe, january.recipe, 'the same recipe');
    assert.notEqual(december.hash, january.hash);
    assert.equal(december.tag, `codeact-sandbox/proxy:${december.recipe}-202612`);
    assert.match(december.recipe, /^[0-9a-f]{16}$/);
    // The month is in the install step itself: the engine's build cache cannot hand back last month's squid.
    assert.match(proxyImageContext('202701').dockerfile, /\nRUN : refreshed 202701 \\\n && apt-get update \\\n/);
  });

  it("names each sandbox's network anew, so a later sandbox given an earlier one's name never joins its network", function () {
    const [a, b] = [sandboxNetworkName('codeact-cli-spare-p-0a0b'), sandboxNetworkName('codeact-cli-spare-p-0a0b')];
    assert.match(a, /^codeact-cli-spare-p-0a0b-[0-9a-f]{8}-net$/);
    assert.notEqual(a, b);
  });

  it("keeps a call's record: a tunnel still open at its end as open, its end by the same client port, refused ones past 200 after the first allowed ones", function () {
    const conn = (host: string, allowed: boolean, extra: Partial<Connection> = {}): Connection => ({ time: 1, host, port: 443, method: 'CONNECT', allowed, bytesOut: 0, bytesIn: 0, ...(allowed ? {} : { reason: 'not listed' as const }), ...extra });
    const record = new CallRecord();
    record.add({ kind: 'tunnel', client: 'c', clientPort: 5001, connection: conn('open.example', true, { open: true }) });
    record.add({ kind: 'tunnel', client: 'c', clientPort: 5002, connection: conn('closed.example', true, { open: true }) });
    record.add({ kind: 'connection', client: 'c', clientPort: 5002, connection: conn('closed.example', true, { bytesIn: 900, serverAddress: '203.0.113.7' }) });
    for (let i = 0; i < 250; i++) record.add({ kind: 'connection', client: 'c', clientPort: 6000 + i, connection: conn(`refused${i}.example`, false) });
    record.add({ kind: 'connection', client: 'c', clientPort: 7000, connection: conn('late.example', true) });
    const activity = record.finish(true);
    assert.deepEqual(
      activity.connections.filter((c) => c.allowed).map((c) => [c.host, c.open, c.bytesIn]),
      [['closed.example', undefined, 900], ['late.example', undefined, 0], ['open.example', true, 0]],
    );
    // The first 200 refused ones among the first connections, the other 50 among the last ones; listed as they came.
    assert.deepEqual(activity.connections.map((c) => c.host).slice(0, 3), ['closed.example', 'refused0.example', 'refused1.example']);
    assert.deepEqual(activity.connections.map((c) => c.host).slice(-3), ['refused249.example', 'late.example', 'open.example']);
    assert.equal(activity.connections.filter((c) => !c.allowed).length, 250);
    assert.equal(activity.omitted, undefined);
    assert.equal(activity.complete, true);
  });

  it('keeps a connection made after thousands that pad the record, the last ones, and every host between, with its count and bytes', function () {
    const conn = (host: string, time: number, extra: Partial<Connection> = {}): Connection => ({ time, host, port: 443, method: 'CONNECT', allowed: true, bytesOut: 1, bytesIn: 2, ...extra });
    const record = new CallRecord();
    let time = 0;
    const add = (c: Connection) => record.add({ kind: 'connection', client: 'c', clientPort: 5000 + (time % 1000), connection: c });
    for (let i = 0; i < 2000; i++) add(conn('pad.example', time++));
    add(conn('hidden.example', time++, { bytesOut: 5000 }));
    for (let i = 0; i < 500; i++) add(conn('pad.example', time++));
    add(conn('last.example', time++));
    const activity = record.finish(true);
    const { connections } = activity;
    assert.equal(connections.length, RECORDED_FIRST + 2 + RECORDED_LAST);
    // The first ones as they came, then one entry per host for those between, then the last ones.
    assert.deepEqual(connections.slice(0, RECORDED_FIRST).map((c) => c.time), Array.from({ length: RECORDED_FIRST }, (_, i) => i));
    assert.deepEqual(connections.slice(RECORDED_FIRST, RECORDED_FIRST + 2), [
      { time: 1000, host: 'pad.example', port: 443, method: 'CONNECT', allowed: true, bytesOut: 1201, bytesIn: 2402, count: 1201 },
      { time: 2000, host: 'hidden.example', port: 443, method: 'CONNECT', allowed: true, bytesOut: 5000, bytesIn: 2, count: 1 },
    ]);
    assert.deepEqual(connections.slice(-RECORDED_LAST).map((c) => c.time), Array.from({ length: RECORDED_LAST }, (_, i) => 2202 + i));
    assert.equal(connections.at(-1)!.host, 'last.example');
    assert.equal(activity.omitted, undefined);
    assert.equal(networkSummary(activity), 'network: 2502 allowed');
    assert.equal(connectionLine(connections[RECORDED_FIRST]!), '00:00:01.000 CONNECT pad.example:443 allowed, 1201 connections from then on, 1201 bytes out, 2402 bytes in in all');
  });

  it('bounds the hosts between the first and last connections: refused names a program makes up are counted past theirs', function () {
    const refused = (i: number): Connection => ({ time: i, host: `r${i}.example`, port: 80, method: 'GET', allowed: false, reason: 'not listed', bytesOut: 0, bytesIn: 0 });
    const allowed = (i: number): Connection => ({ time: i, host: `a${i}.example`, port: 443, method: 'CONNECT', allowed: true, bytesOut: 0, bytesIn: 0 });
    const kept = new CappedConnections();
    const made = RECORDED_FIRST + RECORDED_LAST + RECORDED_HOSTS_ALLOWED + 7;
    for (let i = 0; i < made; i++) kept.keep(allowed(i));
    for (let i = 0; i < MAX_RECORDED_BLOCKED + RECORDED_LAST + RECORDED_HOSTS_BLOCKED + 9; i++) kept.keep(refused(i));
    const activity = kept.activity(true);
    assert.equal(RECORDED_FIRST + RECORDED_LAST + RECORDED_HOSTS_ALLOWED + RECORDED_HOSTS_BLOCKED, MAX_RECORDED_CONNECTIONS);
    assert.equal(activity.connections.length, MAX_RECORDED_CONNECTIONS);
    // The first refused ones came after the first allowed ones had filled their part: all refused are after them.
    assert.equal(activity.connections.filter((c) => c.allowed).length, RECORDED_FIRST + RECORDED_HOSTS_ALLOWED);
    assert.deepEqual(activity.omitted, { allowed: RECORDED_LAST + 7, blocked: MAX_RECORDED_BLOCKED + 9 });
    assert.equal(activity.connections.at(-1)!.host, `r${MAX_RECORDED_BLOCKED + RECORDED_LAST + RECORDED_HOSTS_BLOCKED + 8}.example`);
  });
});

