import { createHmac } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Duplex } from 'node:stream';
import type { ConnectConfig } from 'ssh2';
import { matchesGlob } from '../../core/files/glob';
import type { EngineTarget } from './target';

/** Files an ssh:// connection reads; tests point them at temporary folders. */
export interface SshFiles {
  /** known_hosts files checked for the engine's host key (default ~/.ssh/known_hosts, /etc/ssh/ssh_known_hosts). */
  knownHostsFiles?: string[];
  /** Private keys tried when no agent is available (default ~/.ssh/id_ed25519, id_ecdsa, id_rsa). */
  identityFiles?: string[];
}

/** An HTTP agent whose every connection is a fresh SSH session running `docker system dial-stdio`. */
export class SshDialAgent extends http.Agent {
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
    // ssh2 and its cryptography are loaded only when an ssh:// engine is dialled: most runs never are.
    import('ssh2').then((ssh2) => {
      // A CommonJS package imported from an ES module chunk (the command line's bundle) comes as
      // its default export; from the extension's bundle and the sources, with named exports.
      const { Client } = ssh2.Client ? ssh2 : (ssh2 as unknown as { default: typeof ssh2 }).default;
      const conn = new Client();
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
    }, finish);
    return undefined;
  }
}

export function sshOptions(target: EngineTarget, env: NodeJS.ProcessEnv, environment: SshFiles): ConnectConfig {
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
