import { createHmac } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import type { Duplex } from 'node:stream';
import * as os from 'node:os';
import * as path from 'node:path';
import Dockerode from 'dockerode';
import { Client as SshClient, type ConnectConfig } from 'ssh2';
import { ToolError } from '../core/errors';
import { matchesGlob } from '../core/files/glob';

/**
 * Which Docker engine to talk to, decided the way the docker CLI decides it: an explicit setting
 * first, then DOCKER_HOST / DOCKER_TLS_VERIFY / DOCKER_CERT_PATH, then the local socket or pipe.
 * Everything this project does with an engine crosses its API (tar in, tar out), so a remote
 * engine works the same as a local one.
 */
export type EngineProtocol = 'unix' | 'npipe' | 'tcp' | 'ssh';

/** Where the address came from: the override (settings, CLI flags), the environment, or nowhere. */
export type EngineSource = 'settings' | 'environment' | 'default';

export interface EngineOptions {
  /**
   * Engine URL that overrides DOCKER_HOST: unix:///path, npipe:////./pipe/name, tcp://host:port
   * (or host:port), ssh://user@host:port. When set, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH are
   * ignored too: the whole connection comes from these options.
   */
  host?: string;
  /** Folder holding ca.pem, cert.pem and key.pem (the docker CLI's layout). Implies TLS for tcp://. */
  certPath?: string;
  /**
   * Verify the engine's certificate against ca.pem (and present cert.pem/key.pem). Undefined:
   * on whenever TLS is used because of these options; with `host` unset it falls back to the
   * environment's DOCKER_TLS_VERIFY.
   */
  tlsVerify?: boolean;
  /** How a model-facing error names the override, e.g. "the codeactSandbox.dockerHost setting" or "--docker-host". */
  hint?: string;
}

export interface EngineTls {
  /** Folder with ca.pem, cert.pem and key.pem. */
  certPath: string;
  /** Check the engine's certificate against ca.pem; false only when asked for (DOCKER_CERT_PATH without DOCKER_TLS_VERIFY). */
  verify: boolean;
}

export interface EngineTarget {
  protocol: EngineProtocol;
  source: EngineSource;
  /** unix / npipe: the socket or pipe; undefined means the platform's default one. */
  socketPath?: string;
  /** tcp / ssh. */
  host?: string;
  port?: number;
  /** ssh: the login; undefined means the current user. */
  username?: string;
  /** tcp: TLS material and policy; undefined means plain HTTP. */
  tls?: EngineTls;
  /** tcp with TLS: where the certificate folder came from (for the error that names it). */
  certSource?: 'override' | 'environment' | 'default';
  /** How model-facing errors name the override (EngineOptions.hint). */
  hint: string;
  /** The address as DOCKER_HOST would hold it, without secrets; '' for the platform default. */
  url: string;
  /** Short, for the model and the status bar: no paths, no secrets ("tcp://127.0.0.1:2376", "the local Docker engine"). */
  displayName: string;
  /** One line for the log: address, transport security and origin. No secrets, no file contents. */
  description: string;
}

const DEFAULT_HINT = 'the CodeAct Sandbox Docker engine settings';

/**
 * Decides the engine from the options and the environment. Pure: reads no files, touches no
 * network. A malformed address is a ToolError('invalid_settings') whose sentence never repeats
 * the value (it can hold a user name or a password).
 */
export function resolveEngine(options: EngineOptions = {}, env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): EngineTarget {
  const hint = options.hint ?? DEFAULT_HINT;
  const fromOptions = nonEmpty(options.host);
  const fromEnv = nonEmpty(env.DOCKER_HOST);
  const source: EngineSource = fromOptions ? 'settings' : fromEnv ? 'environment' : 'default';
  const raw = fromOptions ?? fromEnv;
  const where = source === 'settings' ? hint : 'the DOCKER_HOST environment variable';

  // TLS (used for tcp:// only): certPath and tlsVerify each override their variable
  // (DOCKER_CERT_PATH, DOCKER_TLS_VERIFY); an overridden address ignores both variables. As in
  // the Docker SDK a certificate folder turns TLS on; DOCKER_TLS_VERIFY (any non-empty value, as
  // in the docker CLI) turns verification on and defaults the folder to ~/.docker.
  let tls: EngineTls | undefined;
  const home = env.HOME || env.USERPROFILE || os.homedir();
  const overridden = source === 'settings';
  const optCert = nonEmpty(options.certPath);
  const certPath = optCert ?? (overridden ? undefined : nonEmpty(env.DOCKER_CERT_PATH));
  const envVerify = !overridden && nonEmpty(env.DOCKER_TLS_VERIFY) !== undefined;
  // A certificate folder given as an override means verified TLS unless tlsVerify says otherwise.
  const verify = options.tlsVerify ?? (envVerify || optCert !== undefined);
  if (certPath !== undefined || verify) tls = { certPath: certPath ?? path.join(home, '.docker'), verify };
  const certsFrom = optCert !== undefined ? 'certificates from the settings' : certPath !== undefined ? 'certificates from DOCKER_CERT_PATH' : 'certificates from ~/.docker';
  const origin = source === 'settings' ? 'from the settings' : source === 'environment' ? 'from DOCKER_HOST' : 'default';

  if (raw === undefined) {
    const local: EngineTarget = {
      protocol: platform === 'win32' ? 'npipe' : 'unix',
      source,
      url: '',
      hint,
      displayName: 'the local Docker engine',
      description: `local Docker engine (${platform === 'win32' ? 'default named pipe' : 'default socket'}; ${origin})`,
    };
    return local;
  }

  const invalid = (why = '') =>
    new ToolError(
      'invalid_settings',
      `The Docker engine address in ${where} is not valid${why}, so the program was not run. Ask the user to correct it (unix:///path, npipe:////./pipe/name, tcp://HOST:PORT or ssh://USER@HOST[:PORT]).`,
    );

  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(raw)?.[1]?.toLowerCase();
  if (scheme === 'unix' || scheme === 'npipe') {
    const rest = raw.slice(scheme.length + 3);
    const socketPath = rest === '' ? undefined : rest;
    if (socketPath !== undefined && /[\0\n]/.test(socketPath)) throw invalid();
    const displayName = 'the local Docker engine';
    return {
      protocol: scheme,
      source,
      ...(socketPath !== undefined ? { socketPath } : {}),
      url: `${scheme}://${socketPath ?? ''}`,
      hint,
      displayName,
      description: `local Docker engine at ${scheme}://${socketPath ?? (scheme === 'npipe' ? '(default pipe)' : '(default socket)')} (${origin})`,
    };
  }
  if (scheme !== undefined && scheme !== 'tcp' && scheme !== 'ssh') throw invalid(` (the ${scheme}:// scheme is not supported)`);

  let url: URL;
  try {
    url = new URL(scheme ? raw : `tcp://${raw}`);
  } catch {
    throw invalid();
  }
  const hostname = url.hostname;
  if (!hostname) throw invalid();
  if (url.pathname && url.pathname !== '/') throw invalid(' (it must not have a path)');
  if (url.search || url.hash) throw invalid();
  const port = url.port === '' ? undefined : Number(url.port);
  if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535)) throw invalid();
  const bare = hostname.replace(/^\[(.*)\]$/, '$1');

  if (scheme === 'ssh') {
    if (url.password) {
      throw new ToolError(
        'invalid_settings',
        `The Docker engine address in ${where} contains a password, which is not supported, so the program was not run. Ask the user to remove it and log in with an SSH key or agent instead.`,
      );
    }
    const username = url.username ? decodeURIComponent(url.username) : undefined;
    const p = port ?? 22;
    const shown = `ssh://${username ? `${encodeURIComponent(username)}@` : ''}${hostname}:${p}`;
    return {
      protocol: 'ssh',
      source,
      host: bare,
      port: p,
      ...(username !== undefined ? { username } : {}),
      url: `ssh://${username ? `${encodeURIComponent(username)}@` : ''}${hostname}${port !== undefined ? `:${port}` : ''}`,
      hint,
      displayName: shown,
      description: `Docker engine over SSH at ${shown} (${origin}; key from the SSH agent or ~/.ssh, host key checked against known_hosts)`,
    };
  }

  if (url.username || url.password) throw invalid(' (tcp:// addresses take no user name or password)');
  const p = port ?? (tls ? 2376 : 2375);
  const shown = `tcp://${hostname}:${p}`;
  const security = tls
    ? tls.verify
      ? `TLS with a client certificate, engine certificate verified, ${certsFrom}`
      : `TLS with a client certificate, engine certificate NOT verified, ${certsFrom}`
    : 'plain HTTP, no TLS';
  return {
    protocol: 'tcp',
    source,
    host: bare,
    port: p,
    ...(tls ? { tls, certSource: optCert !== undefined ? 'override' : certPath !== undefined ? 'environment' : 'default' } : {}),
    url: shown,
    hint,
    displayName: shown,
    description: `Docker engine at ${shown} (${security}; ${origin})`,
  };
}

/** Files and lookups createDockerClient may use; tests point them at temporary folders. */
export interface ClientEnvironment {
  env?: NodeJS.ProcessEnv;
  /** known_hosts files checked for an ssh:// engine's host key (default ~/.ssh/known_hosts, /etc/ssh/ssh_known_hosts). */
  knownHostsFiles?: string[];
  /** Private keys tried for ssh:// when no agent is available (default ~/.ssh/id_ed25519, id_ecdsa, id_rsa). */
  identityFiles?: string[];
}

const clientTargets = new WeakMap<Dockerode, EngineTarget>();

/** The target a client was made for (for error sentences and the log), when it came from createDockerClient. */
export function engineOf(docker: Dockerode): EngineTarget | undefined {
  return clientTargets.get(docker);
}

/**
 * A Docker client for `target` (default: resolved from the environment). Certificates and SSH
 * keys are read here; a folder without them is a ToolError('invalid_settings') that names no path.
 */
export function createDockerClient(target: EngineTarget = resolveEngine(), environment: ClientEnvironment = {}): Dockerode {
  const env = environment.env ?? process.env;
  const options: Dockerode.DockerOptions & Record<string, unknown> = {
    // Everything explicit: docker-modem merges its own environment defaults under these.
    socketPath: undefined,
    host: undefined,
    port: undefined,
    protocol: undefined,
    ca: undefined,
    cert: undefined,
    key: undefined,
  };
  switch (target.protocol) {
    case 'unix':
    case 'npipe':
      options.socketPath = target.socketPath ?? defaultSocketPath(target.protocol, env);
      break;
    case 'tcp': {
      options.host = target.host;
      options.port = target.port;
      if (target.tls) {
        const material = readTlsMaterial(target);
        options.protocol = 'https';
        options.ca = material.ca;
        options.cert = material.cert;
        options.key = material.key;
        // The agent carries the policy: its options win over the request's in Node's https.
        options.agent = new https.Agent({
          ...(material.ca ? { ca: material.ca } : {}),
          cert: material.cert,
          key: material.key,
          rejectUnauthorized: target.tls.verify,
          keepAlive: true,
        });
      } else {
        options.protocol = 'http';
      }
      break;
    }
    case 'ssh': {
      // Plain HTTP whose connections are `docker system dial-stdio` sessions over SSH (what the
      // docker CLI does). Our own agent rather than docker-modem's 'ssh' protocol: that one
      // builds invalid ssh: URLs (a Node deprecation warning on every request) and hands a
      // failed exec's stream on anyway.
      options.host = target.host;
      options.port = target.port;
      options.protocol = 'http';
      options.agent = new SshDialAgent({
        ...sshOptions(target, env, environment),
        host: target.host!,
        port: target.port ?? 22,
        username: target.username ?? (env.USER || env.LOGNAME || env.USERNAME || os.userInfo().username),
      });
      break;
    }
  }
  const docker = withoutDockerEnv(() => new Dockerode(options));
  clientTargets.set(docker, target);
  return docker;
}

/** The socket docker-modem would pick, made explicit so the docker CLI (Dev Container builds) talks to the same engine. */
export function defaultSocketPath(protocol: 'unix' | 'npipe', env: NodeJS.ProcessEnv = process.env): string {
  if (protocol === 'npipe') return '//./pipe/docker_engine';
  const user = path.join(env.HOME || os.homedir(), '.docker', 'run', 'docker.sock');
  return fs.existsSync(user) ? user : '/var/run/docker.sock';
}

/**
 * Environment for a child process that runs the docker CLI (the Dev Containers CLI does), so it
 * reaches the same engine with the same certificates. Inherited DOCKER_* values are replaced.
 */
export function dockerCliEnv(target: EngineTarget, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  for (const k of ['DOCKER_HOST', 'DOCKER_TLS_VERIFY', 'DOCKER_TLS', 'DOCKER_CERT_PATH', 'DOCKER_CONTEXT']) delete out[k];
  switch (target.protocol) {
    case 'unix':
      out.DOCKER_HOST = `unix://${target.socketPath ?? defaultSocketPath('unix', env)}`;
      break;
    case 'npipe':
      out.DOCKER_HOST = `npipe://${target.socketPath ?? defaultSocketPath('npipe', env)}`;
      break;
    case 'tcp':
      out.DOCKER_HOST = target.url;
      if (target.tls) {
        out.DOCKER_CERT_PATH = target.tls.certPath;
        if (target.tls.verify) out.DOCKER_TLS_VERIFY = '1';
        else out.DOCKER_TLS = '1';
      }
      break;
    case 'ssh':
      out.DOCKER_HOST = target.url;
      break;
  }
  return out;
}

function readTlsMaterial(target: EngineTarget): { ca?: Buffer; cert: Buffer; key: Buffer } {
  const tls = target.tls!;
  const read = (name: string) => fs.readFileSync(path.join(tls.certPath, name));
  try {
    const cert = read('cert.pem');
    const key = read('key.pem');
    let ca: Buffer | undefined;
    try {
      ca = read('ca.pem');
    } catch (e) {
      if (tls.verify) throw e;
    }
    return { ...(ca ? { ca } : {}), cert, key };
  } catch (e) {
    const where = target.certSource === 'override' ? `the certificate folder set in ${target.hint}` : 'the certificate folder (DOCKER_CERT_PATH, default ~/.docker)';
    throw new ToolError(
      'invalid_settings',
      `The TLS certificates for the Docker engine at ${target.displayName} could not be read, so the program was not run. Ask the user to check ${where}: it must contain ca.pem, cert.pem and key.pem.`,
      { cause: e },
    );
  }
}

/** An HTTP agent whose every connection is a fresh SSH session running `docker system dial-stdio`. */
class SshDialAgent extends http.Agent {
  constructor(private readonly config: ConnectConfig) {
    super({ keepAlive: false });
  }

  override createConnection(_options: unknown, callback: (err: Error | null, stream?: Duplex) => void): undefined {
    let done = false;
    const finish = (err: Error | null, stream?: Duplex) => {
      if (done) return;
      done = true;
      callback(err, stream);
    };
    const conn = new SshClient();
    conn.once('ready', () => {
      conn.exec('docker system dial-stdio', (err, channel) => {
        if (err) {
          conn.end();
          finish(err);
          return;
        }
        channel.once('close', () => conn.end());
        // ssh channels lack the socket methods http may call; they are no-ops for a pipe.
        const stream = Object.assign(channel, { setKeepAlive() {}, setNoDelay() {}, setTimeout() {}, ref() {}, unref() {} });
        finish(null, stream as unknown as Duplex);
      });
    });
    conn.on('error', (err) => {
      conn.end();
      finish(err);
    });
    try {
      conn.connect(this.config);
    } catch (e) {
      finish(e as Error);
    }
    return undefined;
  }
}

function sshOptions(target: EngineTarget, env: NodeJS.ProcessEnv, environment: ClientEnvironment): ConnectConfig {
  const home = env.HOME || os.homedir();
  const identityFiles = environment.identityFiles ?? ['id_ed25519', 'id_ecdsa', 'id_rsa'].map((n) => path.join(home, '.ssh', n));
  const knownHosts = environment.knownHostsFiles ?? [path.join(home, '.ssh', 'known_hosts'), '/etc/ssh/ssh_known_hosts'];
  const privateKey = identityFiles.map(readUnencryptedKey).find((k) => k !== undefined);
  const entries = knownHosts.flatMap(readKnownHosts);
  return {
    ...(env.SSH_AUTH_SOCK ? { agent: env.SSH_AUTH_SOCK } : {}),
    ...(privateKey ? { privateKey } : {}),
    readyTimeout: 15_000,
    // Never trust an unknown host: the engine runs our sandboxes and sees every program.
    hostVerifier: (key: Buffer) => hostKeyKnown(entries, target.host!, target.port ?? 22, key),
  };
}

/** A private key file that ssh2 can use without a passphrase (encrypted keys are for the agent). */
function readUnencryptedKey(file: string): Buffer | undefined {
  let data: Buffer;
  try {
    data = fs.readFileSync(file);
  } catch {
    return undefined;
  }
  const text = data.toString('utf8');
  if (/ENCRYPTED/.test(text)) return undefined;
  const openssh = /-----BEGIN OPENSSH PRIVATE KEY-----([\s\S]*?)-----END OPENSSH PRIVATE KEY-----/.exec(text);
  if (openssh) {
    const body = Buffer.from(openssh[1]!.replace(/\s+/g, ''), 'base64');
    const magic = 'openssh-key-v1\0';
    if (body.subarray(0, magic.length).toString('latin1') !== magic) return undefined;
    const len = body.readUInt32BE(magic.length);
    const cipher = body.subarray(magic.length + 4, magic.length + 4 + len).toString('latin1');
    if (cipher !== 'none') return undefined;
  }
  return /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text) ? data : undefined;
}

export interface KnownHost {
  marker?: string;
  patterns: string;
  keyType: string;
  key: Buffer;
}

function readKnownHosts(file: string): KnownHost[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: KnownHost[] = [];
  for (const line of text.split(/\r?\n/)) {
    const fields = line.trim().split(/\s+/);
    if (!fields[0] || fields[0].startsWith('#')) continue;
    const marker = fields[0].startsWith('@') ? fields.shift() : undefined;
    const [patterns, keyType, key] = fields;
    if (!patterns || !keyType || !key) continue;
    out.push({ ...(marker ? { marker } : {}), patterns, keyType, key: Buffer.from(key, 'base64') });
  }
  return out;
}

/** OpenSSH's matching: "host" for port 22, "[host]:port" otherwise; hashed |1|salt|hmac entries; '!' negation; * and ? globs. */
export function hostKeyKnown(entries: readonly KnownHost[], host: string, port: number, key: Buffer): boolean {
  const name = port === 22 ? host : `[${host}]:${port}`;
  let matched = false;
  for (const e of entries) {
    if (!hostMatches(e.patterns, name)) continue;
    if (e.marker === '@revoked' && e.key.equals(key)) return false;
    if (e.marker === undefined && e.key.equals(key)) matched = true;
  }
  return matched;
}

function hostMatches(patterns: string, name: string): boolean {
  if (patterns.startsWith('|1|')) {
    const [, , salt, hash] = patterns.split('|');
    if (!salt || !hash) return false;
    return createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash;
  }
  let ok = false;
  for (const p of patterns.split(',')) {
    const negated = p.startsWith('!');
    // A host name holds no '/', so a glob's `*` (one segment) is OpenSSH's `*` (anything).
    if (matchesGlob(name, negated ? p.slice(1) : p, { ignoreCase: true })) {
      if (negated) return false;
      ok = true;
    }
  }
  return ok;
}

const MODEM_ENV = ['DOCKER_HOST', 'DOCKER_TLS_VERIFY', 'DOCKER_CERT_PATH', 'DOCKER_PATH_PREFIX', 'DOCKER_CLIENT_TIMEOUT'];

/**
 * docker-modem reads the environment in its constructor (and throws on a malformed DOCKER_HOST
 * or a missing DOCKER_CERT_PATH file) even when every option is given. The decision is already
 * made, so construct it with those variables out of sight. Synchronous: nothing else runs meanwhile.
 */
function withoutDockerEnv<T>(make: () => T): T {
  const saved = MODEM_ENV.map((k) => [k, process.env[k]] as const);
  for (const k of MODEM_ENV) delete process.env[k];
  try {
    return make();
  } finally {
    for (const [k, v] of saved) if (v !== undefined) process.env[k] = v;
  }
}

function nonEmpty(s: string | undefined): string | undefined {
  const t = s?.trim();
  return t ? t : undefined;
}
