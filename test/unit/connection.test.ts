import * as assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { thrownToolError } from './toolErrors';
import { createDockerClient, dockerCliEnv, engineOf, hostKeyKnown, resolveEngine } from '../../src/docker/engine/connection';
import { engineUnreachable, isUnreachable, transportFailure } from '../../src/docker/engine/errors';

const HOME = '/home/alice';
const env = (vars: Record<string, string> = {}): NodeJS.ProcessEnv => ({ HOME, ...vars });


describe('Docker engine resolution (unit)', () => {
  it('uses the local socket, or the named pipe on Windows, when nothing is set', () => {
    const unix = resolveEngine({}, env(), 'linux');
    assert.deepEqual(
      { protocol: unix.protocol, source: unix.source, url: unix.url, socketPath: unix.socketPath, tls: unix.tls },
      { protocol: 'unix', source: 'default', url: '', socketPath: undefined, tls: undefined },
    );
    assert.equal(unix.displayName, 'the local Docker engine');
    assert.equal(resolveEngine({}, env(), 'win32').protocol, 'npipe');
    // An empty DOCKER_HOST counts as unset, as in the docker CLI.
    assert.equal(resolveEngine({}, env({ DOCKER_HOST: ' ' }), 'linux').source, 'default');
  });

  it('reads unix:// and npipe:// addresses', () => {
    const unix = resolveEngine({}, env({ DOCKER_HOST: 'unix:///run/user/1000/docker.sock' }));
    assert.equal(unix.protocol, 'unix');
    assert.equal(unix.socketPath, '/run/user/1000/docker.sock');
    assert.equal(unix.source, 'environment');
    assert.equal(unix.url, 'unix:///run/user/1000/docker.sock');
    // The model never sees a path: the display name is generic.
    assert.equal(unix.displayName, 'the local Docker engine');
    assert.equal(resolveEngine({}, env({ DOCKER_HOST: 'unix://' })).socketPath, undefined);

    const pipe = resolveEngine({}, env({ DOCKER_HOST: 'npipe:////./pipe/docker_engine_linux' }));
    assert.equal(pipe.protocol, 'npipe');
    assert.equal(pipe.socketPath, '//./pipe/docker_engine_linux');
    assert.equal(resolveEngine({}, env({ DOCKER_HOST: 'npipe://' })).socketPath, undefined);
  });

  it('reads tcp:// without TLS, with the plain default port, and bare host:port', () => {
    const t = resolveEngine({}, env({ DOCKER_HOST: 'tcp://build-box.example' }));
    assert.deepEqual([t.protocol, t.host, t.port, t.tls, t.url], ['tcp', 'build-box.example', 2375, undefined, 'tcp://build-box.example:2375']);
    assert.match(t.description, /plain HTTP, no TLS; from DOCKER_HOST/);
    const bare = resolveEngine({}, env({ DOCKER_HOST: '10.1.2.3:4243' }));
    assert.deepEqual([bare.protocol, bare.host, bare.port], ['tcp', '10.1.2.3', 4243]);
    const v6 = resolveEngine({}, env({ DOCKER_HOST: 'tcp://[::1]:2375' }));
    assert.deepEqual([v6.host, v6.displayName], ['::1', 'tcp://[::1]:2375']);
  });

  it('follows DOCKER_TLS_VERIFY and DOCKER_CERT_PATH like the Docker SDK', () => {
    // Verify on: certificates default to ~/.docker, the TLS default port is 2376.
    const verify = resolveEngine({}, env({ DOCKER_HOST: 'tcp://h', DOCKER_TLS_VERIFY: '1' }));
    assert.deepEqual(verify.tls, { certPath: path.join(HOME, '.docker'), verify: true });
    assert.equal(verify.port, 2376);
    // Any non-empty value turns verification on, as in the docker CLI (even "0").
    assert.equal(resolveEngine({}, env({ DOCKER_HOST: 'tcp://h:1', DOCKER_TLS_VERIFY: '0' })).tls?.verify, true);
    // A certificate folder alone means TLS without verifying the engine (the SDK's FromEnv).
    const noVerify = resolveEngine({}, env({ DOCKER_HOST: 'tcp://h:2376', DOCKER_CERT_PATH: '/certs' }));
    assert.deepEqual(noVerify.tls, { certPath: '/certs', verify: false });
    assert.match(noVerify.description, /NOT verified/);
    const both = resolveEngine({}, env({ DOCKER_HOST: 'tcp://h:2376', DOCKER_CERT_PATH: '/certs', DOCKER_TLS_VERIFY: 'yes' }));
    assert.deepEqual(both.tls, { certPath: '/certs', verify: true });
    assert.match(both.description, /^Docker engine at tcp:\/\/h:2376 \(TLS with a client certificate, engine certificate verified, certificates from DOCKER_CERT_PATH; from DOCKER_HOST\)$/);
  });

  it('reads ssh://user@host:port, defaulting the port to 22', () => {
    const s = resolveEngine({}, env({ DOCKER_HOST: 'ssh://deploy@builder.internal:2222' }));
    assert.deepEqual([s.protocol, s.username, s.host, s.port, s.url, s.displayName], [
      'ssh',
      'deploy',
      'builder.internal',
      2222,
      'ssh://deploy@builder.internal:2222',
      'ssh://deploy@builder.internal:2222',
    ]);
    const noUser = resolveEngine({}, env({ DOCKER_HOST: 'ssh://builder' }));
    assert.deepEqual([noUser.username, noUser.port, noUser.url], [undefined, 22, 'ssh://builder']);
    // TLS settings mean nothing to ssh://.
    assert.equal(resolveEngine({}, env({ DOCKER_HOST: 'ssh://b', DOCKER_TLS_VERIFY: '1' })).protocol, 'ssh');
  });

  it('lets explicit options override the environment, TLS variables included', () => {
    const e = env({ DOCKER_HOST: 'tcp://env-host:2376', DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: '/env-certs' });
    const plain = resolveEngine({ host: 'tcp://settings-host:2375' }, e);
    assert.deepEqual([plain.host, plain.port, plain.tls, plain.source], ['settings-host', 2375, undefined, 'settings']);
    const withCerts = resolveEngine({ host: 'tcp://settings-host', certPath: '/settings-certs' }, e);
    // A certificate folder given as an override means verified TLS.
    assert.deepEqual(withCerts.tls, { certPath: '/settings-certs', verify: true });
    assert.equal(withCerts.port, 2376);
    assert.match(withCerts.description, /certificates from the settings; from the settings/);
    const insecure = resolveEngine({ host: 'tcp://settings-host:2376', certPath: '/c', tlsVerify: false }, e);
    assert.deepEqual(insecure.tls, { certPath: '/c', verify: false });
    // Only the certificate folder overridden: DOCKER_HOST still applies, the folder is replaced.
    const certOnly = resolveEngine({ certPath: '/other' }, e);
    assert.deepEqual([certOnly.host, certOnly.tls], ['env-host', { certPath: '/other', verify: true }]);
    // tlsVerify alone overrides DOCKER_TLS_VERIFY.
    assert.deepEqual(resolveEngine({ tlsVerify: false }, e).tls, { certPath: '/env-certs', verify: false });
    // A unix override wins over a tcp DOCKER_HOST.
    const local = resolveEngine({ host: 'unix:///var/run/docker.sock' }, e);
    assert.deepEqual([local.protocol, local.socketPath, local.tls], ['unix', '/var/run/docker.sock', undefined]);
  });

  it('refuses malformed addresses with a sentence that does not repeat them', () => {
    for (const bad of ['tcp://', 'http://h:2375', 'fd://', 'tcp://h:99999', 'tcp://h:2375/prefix', 'tcp://user:pw@h:2375', 'ssh://h/some/path', 'tcp://h?x=1']) {
      const fromEnv = thrownToolError(() => resolveEngine({}, env({ DOCKER_HOST: bad })));
      assert.equal(fromEnv.code, 'invalid_settings', bad);
      assert.match(fromEnv.modelMessage, /^The Docker engine address in the DOCKER_HOST environment variable is not valid/, bad);
      if (bad !== 'tcp://' && bad !== 'fd://') assert.ok(!fromEnv.modelMessage.includes(bad), `${bad} leaked into: ${fromEnv.modelMessage}`);
      const fromSettings = thrownToolError(() => resolveEngine({ host: bad, hint: 'the codeactSandbox.dockerHost setting' }, env()));
      assert.match(fromSettings.modelMessage, /^The Docker engine address in the codeactSandbox\.dockerHost setting is not valid/);
    }
    const pw = thrownToolError(() => resolveEngine({ host: 'ssh://bob:hunter2@h' }, env()));
    assert.equal(pw.code, 'invalid_settings');
    assert.match(pw.modelMessage, /contains a password, which is not supported/);
    assert.ok(!pw.modelMessage.includes('hunter2'));
  });

  it('keeps secrets and file contents out of the description and display name', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-conn-'));
    try {
      fs.writeFileSync(path.join(dir, 'key.pem'), '-----BEGIN PRIVATE KEY-----\nSECRETKEYMATERIAL\n-----END PRIVATE KEY-----\n');
      const t = resolveEngine({ host: 'tcp://10.0.0.5:2376', certPath: dir }, env());
      for (const s of [t.description, t.displayName]) {
        assert.ok(!s.includes('SECRETKEYMATERIAL'));
        assert.ok(!s.includes(dir), s);
      }
      const ssh = resolveEngine({}, env({ DOCKER_HOST: 'ssh://carol@10.0.0.6' }));
      assert.equal(ssh.displayName, 'ssh://carol@10.0.0.6:22');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('hands the docker CLI the same engine through its variables', () => {
    const inherited = { PATH: '/bin', DOCKER_HOST: 'tcp://stale:1', DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: '/stale', DOCKER_CONTEXT: 'x' };
    const tls = dockerCliEnv(resolveEngine({ host: 'tcp://h:2376', certPath: '/c' }, env()), inherited);
    assert.deepEqual(
      { host: tls.DOCKER_HOST, verify: tls.DOCKER_TLS_VERIFY, certs: tls.DOCKER_CERT_PATH, ctx: tls.DOCKER_CONTEXT, path: tls.PATH },
      { host: 'tcp://h:2376', verify: '1', certs: '/c', ctx: undefined, path: '/bin' },
    );
    const plain = dockerCliEnv(resolveEngine({ host: 'tcp://h:2375' }, env()), inherited);
    assert.deepEqual([plain.DOCKER_HOST, plain.DOCKER_TLS_VERIFY, plain.DOCKER_CERT_PATH], ['tcp://h:2375', undefined, undefined]);
    const insecure = dockerCliEnv(resolveEngine({ host: 'tcp://h:2376', certPath: '/c', tlsVerify: false }, env()), {});
    assert.deepEqual([insecure.DOCKER_TLS, insecure.DOCKER_TLS_VERIFY], ['1', undefined]);
    assert.equal(dockerCliEnv(resolveEngine({ host: 'unix:///x.sock' }, env()), inherited).DOCKER_HOST, 'unix:///x.sock');
    assert.equal(dockerCliEnv(resolveEngine({ host: 'ssh://u@h:2' }, env()), inherited).DOCKER_HOST, 'ssh://u@h:2');
    // The default engine is made explicit, so the CLI cannot pick another one through a context.
    assert.match(dockerCliEnv(resolveEngine({}, env(), 'linux'), { HOME: '/nonexistent' }).DOCKER_HOST ?? '', /^unix:\/\/\/.*docker\.sock$/);
  });
});

describe('Docker client creation (unit)', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-client-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('refuses a certificate folder without the certificates, naming no path', () => {
    const target = resolveEngine({ host: 'tcp://127.0.0.1:2376', certPath: dir }, env());
    const e = thrownToolError(() => createDockerClient(target));
    assert.equal(e.code, 'invalid_settings');
    assert.equal(
      e.modelMessage,
      'The TLS certificates for the Docker engine at tcp://127.0.0.1:2376 could not be read, so the program was not run. Ask the user to check the certificate folder set in the CodeAct Sandbox Docker engine settings: it must contain ca.pem, cert.pem and key.pem.',
    );
    assert.ok(!e.modelMessage.includes(dir));
  });

  it('builds a client for the target whatever DOCKER_HOST says, and remembers the target', () => {
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = 'this is not a url';
    try {
      const target = resolveEngine({ host: 'unix:///nonexistent.sock' }, env());
      const docker = createDockerClient(target);
      assert.equal(engineOf(docker), target);
      assert.equal((docker.modem as unknown as { socketPath: string }).socketPath, '/nonexistent.sock');
      assert.equal(process.env.DOCKER_HOST, 'this is not a url');
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
    }
  });
});

describe('SSH host key checking (unit)', () => {
  const key = Buffer.from('ssh-ed25519-public-key-blob');
  const other = Buffer.from('another-key');
  const b64 = key.toString('base64');
  const hashed = (name: string) => {
    const salt = Buffer.from('0123456789abcdefghij');
    return `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
  };
  const entries = (lines: string[]) =>
    lines.map((l) => {
      const f = l.split(' ');
      const marker = f[0]!.startsWith('@') ? f.shift() : undefined;
      return { ...(marker ? { marker } : {}), patterns: f[0]!, keyType: f[1]!, key: Buffer.from(f[2]!, 'base64') };
    });

  it('matches plain, [host]:port, hashed and wildcard entries, and nothing else', () => {
    assert.equal(hostKeyKnown(entries([`builder ssh-ed25519 ${b64}`]), 'builder', 22, key), true);
    assert.equal(hostKeyKnown(entries([`builder ssh-ed25519 ${b64}`]), 'builder', 2222, key), false);
    assert.equal(hostKeyKnown(entries([`[builder]:2222 ssh-ed25519 ${b64}`]), 'builder', 2222, key), true);
    assert.equal(hostKeyKnown(entries([`${hashed('[127.0.0.1]:2200')} ssh-ed25519 ${b64}`]), '127.0.0.1', 2200, key), true);
    assert.equal(hostKeyKnown(entries([`*.example ssh-ed25519 ${b64}`]), 'a.example', 22, key), true);
    assert.equal(hostKeyKnown(entries([`*.example,!bad.example ssh-ed25519 ${b64}`]), 'bad.example', 22, key), false);
    // `*` spans dots, `?` is one character, case does not matter, brackets are literal.
    assert.equal(hostKeyKnown(entries([`*.example ssh-ed25519 ${b64}`]), 'a.b.example', 22, key), true);
    assert.equal(hostKeyKnown(entries([`BUILD?R ssh-ed25519 ${b64}`]), 'builder', 22, key), true);
    assert.equal(hostKeyKnown(entries([`[build?r]:2* ssh-ed25519 ${b64}`]), 'builder', 2222, key), true);
    assert.equal(hostKeyKnown(entries([`[builder]:2222 ssh-ed25519 ${b64}`]), 'b', 2222, key), false);
    assert.equal(hostKeyKnown(entries([`builder ssh-ed25519 ${b64}`]), 'builder', 22, other), false);
    assert.equal(hostKeyKnown(entries([]), 'builder', 22, key), false);
    assert.equal(hostKeyKnown(entries([`builder ssh-ed25519 ${b64}`, `@revoked builder ssh-ed25519 ${b64}`]), 'builder', 22, key), false);
  });
});

describe('engine error sentences (unit)', () => {
  const tcp = resolveEngine({ host: 'tcp://127.0.0.1:23760', certPath: '/c' }, env());
  const err = (code: string, message: string) => Object.assign(new Error(message), { code });

  it('says "certificate problem" for TLS failures, naming the engine but no path', () => {
    for (const e of [
      err('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'tlsv13 alert certificate required'),
      err('UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate'),
      err('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'),
      err('ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames"),
      err('EPROTO', 'error:0A000418:SSL routines::tlsv1 alert unknown ca'),
      new Error('wrapper', { cause: err('ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE', 'sslv3 alert bad certificate') }),
    ]) {
      assert.equal(transportFailure(e), 'tls_certificate', e.message);
      assert.equal(isUnreachable(e), true);
      const t = engineUnreachable(e, tcp);
      assert.equal(t.code, 'engine_unreachable');
      assert.match(t.modelMessage, /^The Docker engine at tcp:\/\/127\.0\.0\.1:23760 refused the TLS connection \(certificate problem\)/);
      assert.ok(!t.modelMessage.includes('/c'));
    }
  });

  it('tells a TLS mismatch, SSH failures and plain unreachability apart', () => {
    assert.equal(transportFailure(err('EPROTO', 'SSL routines:ssl3_get_record:wrong version number')), 'tls_mismatch');
    assert.equal(transportFailure(Object.assign(new Error('(HTTP code 400) unexpected - Client sent an HTTP request to an HTTPS server.'), { statusCode: 400 })), 'tls_mismatch');
    assert.equal(transportFailure(Object.assign(new Error('All configured authentication methods failed'), { level: 'client-authentication' })), 'ssh_auth');
    assert.equal(transportFailure(Object.assign(new Error('Host denied (verification failed)'), { level: 'handshake' })), 'ssh_host_key');
    assert.equal(transportFailure(err('ECONNREFUSED', 'connect ECONNREFUSED')), undefined);
    assert.match(engineUnreachable(err('ECONNREFUSED', 'x'), tcp).modelMessage, /^The Docker engine at tcp:\/\/127\.0\.0\.1:23760 is not reachable/);
    // The local engine keeps the familiar sentence.
    assert.match(engineUnreachable(err('ENOENT', 'x'), resolveEngine({}, env())).modelMessage, /^Docker is not reachable, so the program was not run\./);
    assert.match(engineUnreachable(err('ENOENT', 'x')).modelMessage, /^Docker is not reachable/);
  });
});
