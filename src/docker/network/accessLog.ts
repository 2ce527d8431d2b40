/**
 * The proxy's access log, read back: each line (squidConfig's format) becomes a Connection of the
 * sandbox that made it, and the marker a call sends at its end says the call's lines are all in.
 */
import { isIP } from 'node:net';
import type { BlockReason, Connection } from '../../core/network';
import { LOG_TAG, MARK_DOMAIN } from './squidConfig';

export type LogEntry =
  | { kind: 'connection'; client: string; clientPort: number; connection: Connection }
  /**
   * An allowed tunnel accepted (its hello peeked at and spliced): squid logs the tunnel itself,
   * with the same client port, when it ends. Until then it is an open connection.
   */
  | { kind: 'tunnel'; client: string; clientPort: number; connection: Connection }
  /** A call's end, sent by the sandbox at `client` (its nonce). */
  | { kind: 'mark'; client: string; nonce: string; time: number };

const REASONS: Record<string, BlockReason> = {
  unlisted: 'not listed',
  denied: 'denied',
  private: 'private address',
  port: 'port',
  sni: 'sni',
  scheme: 'scheme',
  plain_bound: 'not https',
  standin: 'stand-in',
};

/**
 * The credential forwarder's reasons (resources/proxy/credentials.py): its lines carry the
 * squid code CREDENTIAL, one per request inside a tunnel to a bound host.
 */
const FORWARDER_REASONS: Record<string, BlockReason> = {
  malformed: 'malformed',
  upgrade: 'malformed',
  standin: 'stand-in',
  private: 'private address',
  upstream: 'upstream',
  handshake: 'not tls',
  sni: 'sni',
};
/** The forwarder's verdicts that let a request through: with the credential, or outside its paths and methods. */
const FORWARDED = new Set(['credential', 'bound']);

/** One log line, or undefined for a line that is not a connection of a sandbox (or not ours). */
export function parseLogLine(line: string): LogEntry | undefined {
  const f = line.trim().split(' ');
  if (f.length !== 15 || f[0] !== LOG_TAG) return undefined;
  const [, ts, client, clientPortText, method, host, portText, , bytesIn, bytesOut, squidCode, why, bump, server, sni] = f;
  const time = Math.round(Number(ts) * 1000);
  const port = Number(portText);
  const clientPort = Number(clientPortText);
  if (!Number.isFinite(time) || !Number.isInteger(port) || !Number.isInteger(clientPort) || host === '-' || why === 'source') return undefined;
  if (why === 'mark') {
    const nonce = host.endsWith(`.${MARK_DOMAIN}`) ? host.slice(0, -MARK_DOMAIN.length - 1).replace(/^m-/, '') : '';
    return nonce ? { kind: 'mark', client, nonce, time } : undefined;
  }
  const hello = sni !== '-' ? nameText(sni) : undefined;
  const serverAddress = isIP(server) !== 0 ? server : undefined;
  const base = {
    time,
    host: nameText(host),
    port,
    method: /^[A-Z]{1,16}$/.test(method) ? method : nameText(method),
    bytesOut: count(bytesOut),
    bytesIn: count(bytesIn),
    ...(hello ? { sni: hello } : {}),
    ...(serverAddress ? { serverAddress } : {}),
  };
  if (squidCode === 'CREDENTIAL') {
    const passed = FORWARDED.has(why);
    const reason = passed ? undefined : (FORWARDER_REASONS[why] ?? 'malformed');
    return { kind: 'connection', client, clientPort, connection: { ...base, allowed: passed, ...(reason ? { reason } : {}), ...(why === 'credential' ? { credential: true } : {}) } };
  }
  if (method === 'CONNECT' && squidCode === 'NONE_NONE' && why === 'allowed' && bump === 'splice') {
    return { kind: 'tunnel', client, clientPort, connection: { ...base, bytesOut: 0, bytesIn: 0, allowed: true, open: true } };
  }
  let reason: BlockReason | undefined;
  if (why === 'allowed') {
    // Accepted, peeked at, and closed without a TLS hello to splice: squid refused what came instead.
    if (method === 'CONNECT' && squidCode === 'NONE_NONE' && bump === 'peek') reason = 'not tls';
  } else {
    reason = REASONS[why] ?? 'not listed';
    if (reason === 'not listed' && isIP(host.replace(/^\[|\]$/g, '')) !== 0) reason = 'address';
  }
  return { kind: 'connection', client, clientPort, connection: { ...base, allowed: reason === undefined, ...(reason ? { reason } : {}) } };
}

/** Longest a name is shown: a domain name has at most 253 characters. */
export const MAX_NAME_TEXT = 253;

/**
 * A name from the log as the record shows it: decoded when it is made of a name's characters
 * alone, else kept escaped (a program's crafted server name must not add a line, or anything that
 * looks like one, to what the user and the model read), and never longer than a domain name.
 */
export function nameText(text: string): string {
  let decoded: string | undefined;
  try {
    decoded = decodeURIComponent(text);
  } catch {
    decoded = undefined;
  }
  const shown = decoded !== undefined && /^[A-Za-z0-9._:[\]-]*$/.test(decoded) ? decoded : escapeName(decoded ?? text);
  return shown.length > MAX_NAME_TEXT ? `${shown.slice(0, MAX_NAME_TEXT - 1)}…` : shown;
}

/** Every character but a name's as %XX of its UTF-8 bytes. */
function escapeName(text: string): string {
  return [...text].map((c) => (/[A-Za-z0-9._:[\]-]/.test(c) ? c : [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''))).join('');
}

function count(text: string): number {
  const n = Number(text);
  return Number.isFinite(n) && n >= 0 ? n : 0;
}
