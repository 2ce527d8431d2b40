import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { credentialsNote, parseBindings, reachableBindings, wireBinding } from '../../src/core/credentials';
import { domainLists, networkPolicy } from '../../src/core/network';
import { credentialsOf, readSettings } from '../../src/core/settings';
import { settingValue } from '../../src/core/trust';
import { networkKey, specKey } from '../../src/docker/container/spec';
import { parseLogLine } from '../../src/docker/network/accessLog';
import { squidConfig } from '../../src/docker/network/squidConfig';
import { squidCredentials } from '../../src/docker/network/credentialProxy';
import { credentialsFrom } from '../../src/cli/credentialFiles';
import { parse } from '../../src/cli/options';

describe('credentials the proxy adds (unit)', () => {
  it('reads a person\'s bindings, and drops with a sentence any that is bad, never widening one', () => {
    const { bindings, problems } = parseBindings(
      [
        { secret: 'openai', hosts: ['API.openai.com'], paths: ['/v1'], methods: ['post', 'GET'] },
        { secret: 'k', hosts: ['*.example.com'], as: 'header', name: 'X-Api-Key', placeholder: 'EXAMPLE_KEY' },
        { secret: 'bad name!', hosts: ['a.example'] },
        { secret: 'k2', hosts: ['*'] },
        { secret: 'k3', hosts: ['a.example'], paths: ['/v1/../admin'] },
        { secret: 'k4', hosts: ['a.example'], as: 'header', name: 'Host' },
        { secret: 'k5', hosts: ['a.example'], placeholder: 'HTTPS_PROXY' },
        { secret: 'k6', hosts: ['a.example'], as: 'header', name: 'X-K', prefix: 'a\r\nX-Evil: 1' },
      ],
      's',
    );
    assert.deepEqual(bindings, [
      { secret: 'openai', hosts: ['api.openai.com'], paths: ['/v1'], methods: ['GET', 'POST'], send: { as: 'bearer' } },
      { secret: 'k', hosts: ['*.example.com'], paths: [], methods: [], send: { as: 'header', name: 'X-Api-Key', prefix: '' }, placeholder: 'EXAMPLE_KEY' },
    ]);
    assert.deepEqual(problems, [
      's[2]: needs "secret": the name of a stored secret (letters, digits, ".", "_", "-"); it is ignored.',
      's[3]: host "*" would allow every domain (name the domains); it is ignored.',
      's[4]: path "/v1/../admin" is not a path prefix (it starts with /, has no dot segment, query or encoded slash); it is ignored.',
      's[5]: the header Host frames or routes the request; a credential cannot be sent in it; it is ignored.',
      's[6]: "placeholder" HTTPS_PROXY is a variable the sandbox sets or needs; it is ignored.',
      's[7]: "prefix" must be plain text without line breaks; it is ignored.',
    ]);
  });

  it('keeps a binding only where the allow-list lets programs go, so a binding never widens it', () => {
    const lists = domainLists(['api.example.com', '*.cdn.example.org'], ['private.cdn.example.org']);
    const { bindings } = parseBindings(
      [
        { secret: 'a', hosts: ['api.example.com'] },
        { secret: 'b', hosts: ['other.example.com'] },
        { secret: 'c', hosts: ['*.cdn.example.org'] },
        { secret: 'd', hosts: ['x.cdn.example.org'] },
        { secret: 'e', hosts: ['private.cdn.example.org'] },
      ],
      's',
    );
    const kept = reachableBindings(bindings, lists, 'the allow-list');
    assert.deepEqual(kept.bindings.map((b) => b.secret), ['a', 'd']);
    const said = (secret: string, host: string) =>
      `The credential binding for the secret ${secret} names ${host}, which the allow-list does not let programs reach (or a deny entry cuts into); the binding is ignored.`;
    assert.deepEqual(kept.problems, [said('b', 'other.example.com'), said('c', '*.cdn.example.org'), said('e', 'private.cdn.example.org')]);
  });

  it('tells the forwarder each way of sending, with what to mask in responses', () => {
    const [bearer, basic, header, query] = parseBindings(
      [
        { secret: 's', hosts: ['a.example'] },
        { secret: 's', hosts: ['a.example'], as: 'basic', user: 'me' },
        { secret: 's', hosts: ['a.example'], as: 'header', name: 'X-Key', prefix: 'Token ' },
        { secret: 's', hosts: ['a.example'], as: 'query', name: 'key' },
      ],
      's',
    ).bindings;
    assert.deepEqual(wireBinding(bearer!, 'v/1', undefined).header, ['Authorization', 'Bearer v/1']);
    assert.deepEqual(wireBinding(basic!, 'pw', undefined), { hosts: ['a.example'], paths: [], methods: [], secret: 's', header: ['Authorization', 'Basic bWU6cHc='], redact: ['pw', 'bWU6cHc='] });
    assert.deepEqual(wireBinding(header!, 'v', 'stand').header, ['X-Key', 'Token v']);
    assert.deepEqual(wireBinding(query!, 'v/1', undefined).redact, ['v/1', 'v%2F1', 'v%2f1']);
    // Sent as it is masked: every byte but the unreserved ones encoded (encodeURIComponent keeps !'()*, which a server echoes as sent).
    const odd = wireBinding(query!, "a b!'()*é~", undefined);
    assert.deepEqual(odd.query, ['key', 'a%20b%21%27%28%29%2A%C3%A9~']);
    assert.deepEqual(odd.redact, ["a b!'()*é~", 'a%20b%21%27%28%29%2A%C3%A9~', 'a%20b%21%27%28%29%2a%c3%a9~', "a%20b!'()*%C3%A9~", 'a+b%21%27%28%29*%C3%A9%7E']);
  });

  it('tells the model which hosts get a credential and how, never a secret\'s name, and nothing without bindings', () => {
    const { bindings } = parseBindings(
      [
        { secret: 'openai-prod', hosts: ['api.openai.com'] },
        { secret: 'maps', hosts: ['*.maps.example', 'maps.example'], as: 'query', name: 'key', paths: ['/v1'], methods: ['GET'] },
        { secret: 'gh', hosts: ['api.github.com'], as: 'header', name: 'X-Api-Key', placeholder: 'GH_KEY' },
      ],
      's',
    );
    assert.equal(
      credentialsNote(bindings),
      "The proxy adds the user's credentials to HTTPS requests on their way out, for: api.openai.com (as Authorization: Bearer), " +
        '*.maps.example, maps.example (as the key query parameter; paths /v1; methods GET), api.github.com (in the X-Api-Key header; a stand-in key in $GH_KEY). ' +
        'Call those hosts without a key: the program cannot read the value and needs none. ' +
        'Where a library insists on a key, give it the stand-in from its variable: the proxy swaps it on that host alone.',
    );
    assert.equal(credentialsNote([]), undefined);
  });

  it("takes the bindings from the user's own settings only: a workspace's, trusted or not, is ignored", () => {
    const inspected = { defaultValue: [], globalValue: [{ secret: 'mine', hosts: ['api.example.com'] }], workspaceValue: [{ secret: 'mine', hosts: ['evil.example'] }] };
    assert.deepEqual(settingValue('credentials', inspected, true), inspected.globalValue);
    assert.deepEqual(settingValue('credentials', { defaultValue: [], workspaceFolderValue: [{ secret: 'mine', hosts: ['evil.example'] }] }, true), []);
    const { settings } = readSettings((k) => (k === 'network.allow' ? ['api.example.com'] : k === 'credentials' ? inspected.globalValue : undefined));
    const { policy } = networkPolicy(settings['network.allow'], []);
    assert.deepEqual(credentialsOf(settings, policy).bindings.map((b) => b.hosts), [['api.example.com']]);
  });

  it('keys a sandbox by its bindings, stand-ins and generation, never by anything that holds a value', () => {
    const { policy } = networkPolicy(['a.example'], []);
    const values = { generation: 'g1', read: async () => 'the-value', secretValue: 'the-value' };
    const network = { policy: policy!, credentials: { bindings: parseBindings([{ secret: 's', hosts: ['a.example'] }], 's').bindings, standIns: {}, values } };
    assert.ok(!networkKey(network).includes('the-value'));
    assert.ok(!specKey({ image: 'i', limits: { memoryMb: 1, cpus: 1, pidsLimit: 1, workAreaMb: 1 }, network }).includes('the-value'));
    assert.notEqual(networkKey(network), networkKey({ ...network, credentials: { ...network.credentials, values: { ...values, generation: 'g2' } } }));
  });

  it('sends bound hosts to the forwarder, refuses plain HTTP to them, and a plain request carrying a stand-in', () => {
    const { policy } = networkPolicy(['api.example.com', 'web.example.org'], []);
    const text = squidConfig({ policy: policy!, clients: { only: '127.0.0.1/32' }, credentials: { hosts: ['api.example.com'], standIns: ['codeact-stand-in-ab12'], headers: ['X-Api-Key'], port: 3129 } });
    for (const line of [
      'acl bound dstdom_regex -n -i ^api\\.example\\.com$',
      'acl standin_url url_regex codeact-stand-in-ab12',
      'acl standin_header_0 req_header X-Api-Key codeact-stand-in-ab12',
      'http_access deny !CONNECT bound why_plain_bound',
      'http_access deny !CONNECT standin_url why_standin',
      'cache_peer 127.0.0.1 parent 3129 0 no-query no-digest no-netdb-exchange name=credentials',
      'never_direct allow CONNECT bound',
    ]) {
      assert.ok(text.split('\n').includes(line), line);
    }
    assert.ok(text.indexOf('ssl_bump splice step1 bound') < text.indexOf('ssl_bump peek step1'));
    // A stand-in is looked for in its binding's header and in those keys usually travel in; none without a placeholder.
    const { bindings } = parseBindings([{ secret: 'k', hosts: ['api.example.com'], as: 'header', name: 'x-api-key', placeholder: 'K' }, { secret: 'b', hosts: ['web.example.org'] }], 's');
    const values = { generation: 'g', read: async () => undefined };
    assert.deepEqual(squidCredentials({ bindings, standIns: { K: 'codeact-stand-in-ab12' }, values }, 3129).headers, [
      'x-api-key',
      'Authorization',
      'Proxy-Authorization',
      'Cookie',
      'Api-Key',
      'X-Auth-Token',
      'X-Access-Token',
      'X-Goog-Api-Key',
      'Ocp-Apim-Subscription-Key',
      'X-Functions-Key',
    ]);
    assert.deepEqual(squidCredentials({ bindings: bindings.slice(1), standIns: {}, values }, 3129).headers, []);
  });

  it("reads the forwarder's lines: the credential added, and why a request was refused", () => {
    const line = (why: string, status = 200) => `codeact-net 1700000000.000 127.0.0.1 0 GET api.example.com 443 ${status} 100 50 CREDENTIAL ${why} - 203.0.113.9 -`;
    const base = { time: 1700000000000, host: 'api.example.com', port: 443, method: 'GET', bytesIn: 100, bytesOut: 50, serverAddress: '203.0.113.9' };
    assert.deepEqual(parseLogLine(line('credential')), { kind: 'connection', client: '127.0.0.1', clientPort: 0, connection: { ...base, allowed: true, credential: true } });
    assert.deepEqual(parseLogLine(line('bound')), { kind: 'connection', client: '127.0.0.1', clientPort: 0, connection: { ...base, allowed: true } });
    for (const [why, reason] of [['malformed', 'malformed'], ['standin', 'stand-in'], ['upstream', 'upstream'], ['sni', 'sni']]) {
      assert.equal((parseLogLine(line(why!, 400)) as { connection: { reason?: string } }).connection.reason, reason);
    }
  });

  it('the command line reads each value from the file it names, never from an argument, and keys by the files, not the values', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-cred-'));
    try {
      fs.writeFileSync(path.join(dir, 'b.json'), JSON.stringify([{ secret: 'api', hosts: ['api.example.com'], placeholder: 'API_KEY' }]));
      fs.writeFileSync(path.join(dir, 'v'), 'value-from-file\n');
      const errors: string[] = [];
      const output = { out: () => {}, err: (t: string) => errors.push(t) } as unknown as Parameters<typeof credentialsFrom>[2];
      const { policy } = networkPolicy(['api.example.com'], []);
      const p = parse(['run', '--credentials', path.join(dir, 'b.json'), '--secret', `api=${path.join(dir, 'v')}`, 'x.py']);
      const c = credentialsFrom(p, policy, output)!;
      assert.deepEqual(errors, []);
      assert.deepEqual(Object.keys(c.standIns), ['API_KEY']);
      assert.ok(!JSON.stringify(c).includes('value-from-file'));
      assert.equal(await c.values.read('api'), 'value-from-file');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
