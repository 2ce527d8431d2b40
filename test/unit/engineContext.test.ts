import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDockerClient, dockerCliEnv, resolveEngine, type EngineTarget } from '../../src/docker/engine/connection';
import { contextDigest } from '../../src/docker/engine/context';
import { engineUnreachable } from '../../src/docker/engine/errors';
import { thrownToolError } from './toolErrors';

/** A docker CLI configuration folder in a temporary directory, written the way the CLI writes it. */
class FakeCliConfig {
  readonly home = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-ctx-'));
  readonly dir = path.join(this.home, '.docker');

  currentContext(name: string | undefined, extra: Record<string, unknown> = { auths: {} }): this {
    fs.mkdirSync(this.dir, { recursive: true });
    fs.writeFileSync(path.join(this.dir, 'config.json'), JSON.stringify({ ...extra, ...(name !== undefined ? { currentContext: name } : {}) }));
    return this;
  }

  context(name: string, host: string | undefined, opts: { skipTlsVerify?: boolean; tls?: ('ca' | 'cert' | 'key')[]; meta?: string } = {}): this {
    const meta = path.join(this.dir, 'contexts', 'meta', contextDigest(name));
    fs.mkdirSync(meta, { recursive: true });
    const endpoint = host === undefined ? {} : { docker: { Host: host, SkipTLSVerify: opts.skipTlsVerify ?? false } };
    fs.writeFileSync(path.join(meta, 'meta.json'), opts.meta ?? JSON.stringify({ Name: name, Metadata: {}, Endpoints: endpoint }));
    if (opts.tls?.length) {
      const tls = this.tlsDir(name);
      fs.mkdirSync(tls, { recursive: true });
      for (const f of opts.tls) fs.writeFileSync(path.join(tls, `${f}.pem`), `-----BEGIN ${f}-----\n`);
    }
    return this;
  }

  tlsDir(name: string): string {
    return path.join(this.dir, 'contexts', 'tls', contextDigest(name), 'docker');
  }

  env(vars: Record<string, string> = {}): NodeJS.ProcessEnv {
    return { HOME: this.home, ...vars };
  }

  remove(): void {
    fs.rmSync(this.home, { recursive: true, force: true });
  }
}

/** The model's sentence for an engine choice refused as invalid settings. */
const refusal = (fn: () => unknown): string => thrownToolError(fn, 'invalid_settings').modelMessage;

/** The parts of a target that say which engine and why. */
const choice = (t: EngineTarget) => ({ protocol: t.protocol, source: t.source, reason: t.reason, socketPath: t.socketPath, context: t.context?.name });

describe('Docker contexts: engine resolution (unit)', () => {
  let cli: FakeCliConfig;
  beforeEach(() => {
    cli = new FakeCliConfig();
  });
  afterEach(() => cli.remove());

  it('follows the current context of the docker CLI config, with its endpoint', () => {
    cli.currentContext('colima').context('colima', 'unix:///Users/me/.colima/default/docker.sock');
    const t = resolveEngine({}, cli.env(), 'darwin');
    assert.deepEqual(choice(t), {
      protocol: 'unix',
      source: 'context',
      reason: "context colima (the docker CLI's current context)",
      socketPath: '/Users/me/.colima/default/docker.sock',
      context: 'colima',
    });
    assert.deepEqual(t.context, { name: 'colima', configDir: cli.dir, endpoint: 'unix:///Users/me/.colima/default/docker.sock' });
    assert.equal(t.displayName, 'the local Docker engine');
    assert.equal(t.description, "local Docker engine at unix:///Users/me/.colima/default/docker.sock (from context colima (the docker CLI's current context))");
  });

  it('lets DOCKER_CONTEXT override the config, and DOCKER_HOST override both', () => {
    cli.currentContext('colima').context('colima', 'unix:///colima.sock').context('orbstack', 'unix:///orbstack.sock');
    assert.deepEqual(choice(resolveEngine({}, cli.env({ DOCKER_CONTEXT: 'orbstack' }))), {
      protocol: 'unix',
      source: 'context',
      reason: 'context orbstack (DOCKER_CONTEXT)',
      socketPath: '/orbstack.sock',
      context: 'orbstack',
    });
    assert.deepEqual(choice(resolveEngine({}, cli.env({ DOCKER_CONTEXT: 'orbstack', DOCKER_HOST: 'unix:///env.sock' }))), {
      protocol: 'unix',
      source: 'environment',
      reason: 'DOCKER_HOST',
      socketPath: '/env.sock',
      context: undefined,
    });
  });

  it('lets an explicit context (setting, --context) override DOCKER_HOST, and refuses one together with an address', () => {
    cli.context('colima', 'unix:///colima.sock');
    const origin = { host: 'setting codeactSandbox.dockerHost', context: 'setting codeactSandbox.dockerContext' };
    const t = resolveEngine({ context: 'colima', origin }, cli.env({ DOCKER_HOST: 'tcp://elsewhere:2375', DOCKER_CONTEXT: 'other' }));
    assert.deepEqual(choice(t), { protocol: 'unix', source: 'context', reason: 'context colima (setting codeactSandbox.dockerContext)', socketPath: '/colima.sock', context: 'colima' });
    assert.equal(
      refusal(() => resolveEngine({ host: 'unix:///x.sock', context: 'colima', origin }, cli.env())),
      'Both a Docker engine address (setting codeactSandbox.dockerHost) and a Docker context (setting codeactSandbox.dockerContext) are set, so the program was not run. Ask the user to clear one of them.',
    );
  });

  it('takes the context "default" to mean the platform default', () => {
    cli.currentContext('default');
    assert.deepEqual(choice(resolveEngine({}, cli.env(), 'linux')), {
      protocol: 'unix',
      source: 'default',
      reason: "platform default (context default, the docker CLI's current context)",
      socketPath: undefined,
      context: undefined,
    });
    cli.currentContext('colima').context('colima', 'unix:///colima.sock');
    const viaEnv = resolveEngine({}, cli.env({ DOCKER_CONTEXT: 'default' }), 'win32');
    assert.deepEqual([viaEnv.protocol, viaEnv.source, viaEnv.reason, viaEnv.url], ['npipe', 'default', 'platform default (context default, DOCKER_CONTEXT)', '']);
  });

  it('reads the store under DOCKER_CONFIG instead of ~/.docker', () => {
    cli.currentContext('colima').context('colima', 'unix:///home.sock');
    const elsewhere = new FakeCliConfig();
    try {
      elsewhere.currentContext('orbstack').context('orbstack', 'unix:///config.sock');
      const t = resolveEngine({}, cli.env({ DOCKER_CONFIG: elsewhere.dir }));
      assert.deepEqual([t.reason, t.socketPath, t.context?.configDir], ["context orbstack (the docker CLI's current context)", '/config.sock', elsewhere.dir]);
    } finally {
      elsewhere.remove();
    }
  });

  it('uses the platform default without a config, with an empty one, and (like the docker CLI) with an unreadable one', () => {
    assert.equal(resolveEngine({}, cli.env()).reason, 'platform default');
    cli.currentContext(undefined);
    assert.equal(resolveEngine({}, cli.env()).reason, 'platform default');
    fs.writeFileSync(path.join(cli.dir, 'config.json'), '{"currentContext": ');
    assert.equal(resolveEngine({}, cli.env()).reason, `platform default (${path.join(cli.dir, 'config.json')} is not valid JSON)`);
  });

  it('takes TLS material and SkipTLSVerify from the context, never from DOCKER_CERT_PATH or DOCKER_TLS_VERIFY', () => {
    const tlsEnv = { DOCKER_CERT_PATH: '/env-certs', DOCKER_TLS_VERIFY: '1' };
    cli.context('full', 'tcp://build-box:2376', { tls: ['ca', 'cert', 'key'] });
    const full = resolveEngine({}, cli.env({ ...tlsEnv, DOCKER_CONTEXT: 'full' }));
    assert.deepEqual([full.tls, full.certSource, full.port], [{ certPath: cli.tlsDir('full'), verify: true }, 'context', 2376]);
    assert.equal(full.description, 'Docker engine at tcp://build-box:2376 (TLS with a client certificate, engine certificate verified, certificates from context full; from context full (DOCKER_CONTEXT))');

    cli.context('skip', 'tcp://build-box', { skipTlsVerify: true });
    const skip = resolveEngine({}, cli.env({ DOCKER_CONTEXT: 'skip' }));
    assert.deepEqual([skip.tls, skip.port], [{ certPath: cli.tlsDir('skip'), verify: false }, 2376]);
    assert.match(skip.description, /^Docker engine at tcp:\/\/build-box:2376 \(TLS without a client certificate, engine certificate NOT verified, /);

    cli.context('ca-only', 'tcp://build-box:2376', { tls: ['ca'] });
    assert.match(resolveEngine({}, cli.env({ DOCKER_CONTEXT: 'ca-only' })).description, /\(TLS without a client certificate, engine certificate verified, /);

    cli.context('plain', 'tcp://build-box');
    const plain = resolveEngine({ certPath: '/settings-certs', tlsVerify: true }, cli.env({ ...tlsEnv, DOCKER_CONTEXT: 'plain' }));
    assert.deepEqual([plain.tls, plain.port], [undefined, 2375]);
  });

  it('builds a client from a context with only a CA: the engine is verified, no client certificate is sent', () => {
    cli.context('ca-only', 'tcp://127.0.0.1:2376', { tls: ['ca'] });
    const target = resolveEngine({ context: 'ca-only' }, cli.env());
    const modem = createDockerClient(target).modem as unknown as { protocol: string; ca?: Buffer; cert?: Buffer; key?: Buffer };
    assert.deepEqual([modem.protocol, modem.ca?.toString(), modem.cert, modem.key], ['https', '-----BEGIN ca-----\n', undefined, undefined]);
  });

  it('refuses a context that does not exist, cannot be read or has no Docker endpoint, with one sentence each', () => {
    assert.equal(
      refusal(() => resolveEngine({}, cli.env({ DOCKER_CONTEXT: 'colima' }))),
      'The Docker context "colima" (chosen by DOCKER_CONTEXT) does not exist, so the program was not run. Ask the user to choose a context that `docker context ls` lists, or to create this one.',
    );
    cli.currentContext('broken').context('broken', undefined, { meta: '{"Name": "broken", ' });
    assert.equal(
      refusal(() => resolveEngine({}, cli.env())),
      'The Docker context "broken" (chosen by the docker CLI\'s current context) could not be read (its meta.json is not valid), so the program was not run. Ask the user to check it with `docker context inspect broken`, or to create it again.',
    );
    cli.context('k8s-only', undefined);
    assert.equal(
      refusal(() => resolveEngine({ context: 'k8s-only', origin: { context: '--context' } }, cli.env())),
      'The Docker context "k8s-only" (chosen by --context) has no Docker endpoint, so the program was not run. Ask the user to give it one (`docker context update k8s-only --docker host=...`) or to choose another context.',
    );
    cli.context('bad', 'tcp://user:pw@h:2375');
    const bad = refusal(() => resolveEngine({ context: 'bad' }, cli.env()));
    assert.equal(
      bad,
      'The Docker engine address in the Docker context "bad" is not valid (tcp:// addresses take no user name or password), so the program was not run. Ask the user to correct it (unix:///path, npipe:////./pipe/name, tcp://HOST:PORT or ssh://USER@HOST[:PORT]).',
    );
  });

  it('reads nothing when an address decides, and only the config and the named context otherwise', () => {
    const reads: string[] = [];
    const files = new Map([
      [path.join('/cfg', 'config.json'), '{"currentContext":"colima"}'],
      [path.join('/cfg', 'contexts', 'meta', contextDigest('colima'), 'meta.json'), '{"Endpoints":{"docker":{"Host":"unix:///c.sock"}}}'],
    ]);
    const readFile = (f: string) => (reads.push(f), files.get(f));
    resolveEngine({}, { DOCKER_CONFIG: '/cfg', DOCKER_HOST: 'unix:///x.sock' }, 'linux', { readFile });
    resolveEngine({ host: 'tcp://h:2375' }, { DOCKER_CONFIG: '/cfg' }, 'linux', { readFile });
    assert.deepEqual(reads, []);
    const t = resolveEngine({}, { DOCKER_CONFIG: '/cfg' }, 'linux', { readFile });
    assert.equal(t.socketPath, '/c.sock');
    const tls = path.join('/cfg', 'contexts', 'tls', contextDigest('colima'), 'docker');
    assert.deepEqual(reads, [...files.keys(), ...['ca.pem', 'cert.pem', 'key.pem'].map((f) => path.join(tls, f))]);
  });

  it('lets the caller replace the platform default', () => {
    const t = resolveEngine({}, cli.env(), 'linux', { platformDefault: 'unix:///nowhere/docker.sock' });
    assert.deepEqual(choice(t), { protocol: 'unix', source: 'default', reason: 'platform default', socketPath: '/nowhere/docker.sock', context: undefined });
  });

  it("stores a context under the SHA-256 of its name, as the docker CLI does", () => {
    // Measured with `docker context create plain` (docker 28.2).
    assert.equal(contextDigest('plain'), 'a116c9ed46d6207734a43317d30fd88f52ac8634c37d904bbf4e41d865f90475');
  });

  it('hands the docker CLI the same context, not its address', () => {
    cli.context('colima', 'unix:///colima.sock');
    const out = dockerCliEnv(resolveEngine({ context: 'colima' }, cli.env()), { PATH: '/bin', DOCKER_HOST: 'tcp://stale:1', DOCKER_CERT_PATH: '/stale' });
    assert.deepEqual(out, { PATH: '/bin', DOCKER_CONFIG: cli.dir, DOCKER_CONTEXT: 'colima' });
  });

  it('says which context points at nothing, and where', () => {
    cli.context('colima', 'unix:///Users/me/.colima/default/docker.sock');
    const t = resolveEngine({ context: 'colima' }, cli.env());
    const e = engineUnreachable(Object.assign(new Error('connect ENOENT'), { code: 'ENOENT' }), t);
    assert.equal(e.code, 'engine_unreachable');
    assert.equal(
      e.modelMessage,
      'The Docker context "colima" points at unix:///Users/me/.colima/default/docker.sock, where no Docker engine answers, so the program was not run; ask the user to start that engine or to switch to a working context (docker context use NAME), then try again.',
    );
  });
});
