/**
 * What a program did on the network, as the proxy saw it: one record per connection (or plain
 * HTTP request), kept with the run, summed up on the run's node, and turned into the sentence the
 * model gets when a name was refused.
 */

/** Why the proxy refused a connection. */
export type BlockReason =
  /** The name is not on the allow-list. */
  | 'not listed'
  /** The name is on the deny-list. */
  | 'denied'
  /** The host is an IP address: only names on the list are reached. */
  | 'address'
  /** The name resolves to a loopback, private, link-local or metadata address. */
  | 'private address'
  /** Not one of the allowed ports (80 for plain HTTP, 443 for a tunnel). */
  | 'port'
  /** The TLS client hello named another server than the one allowed. */
  | 'sni'
  /** A tunnel through port 443 that did not start with a TLS client hello. */
  | 'not tls'
  /** Not an http:// request or a tunnel (ftp://, the proxy's own cache manager). */
  | 'scheme'
  /** Plain http:// to a host a credential is bound to: only HTTPS goes there. */
  | 'not https'
  /** A request to a credential's host that could be read two ways (a second Host, folded headers, conflicting lengths). */
  | 'malformed'
  /** A placeholder's stand-in sent where its credential is not bound. */
  | 'stand-in'
  /** The credential's host could not be reached, or its certificate not verified. */
  | 'upstream';

export interface Connection {
  /** When the proxy logged it (its end), ms since the epoch. */
  time: number;
  /** The name (or address) the program asked for. */
  host: string;
  port: number;
  /** CONNECT for a tunnel (HTTPS), else the plain HTTP method. */
  method: string;
  allowed: boolean;
  /** Set when refused. */
  reason?: BlockReason;
  /** The server name of the TLS client hello, when the proxy saw one. */
  sni?: string;
  /** Bytes from the program to the proxy, and back (0 for a tunnel still open: squid counts them at its end). */
  bytesOut: number;
  bytesIn: number;
  /** The address the proxy connected to for it, when it connected anywhere. */
  serverAddress?: string;
  /** A tunnel still open when the call ended: its bytes are not known yet. */
  open?: boolean;
  /** A request to a host a credential is bound to: true when the proxy added the credential (the record never holds its value). */
  credential?: boolean;
  /** Made by a kept run re-run to rebuild the chat's state before the call (its run id), not by the call's program. */
  replayOf?: string;
  /**
   * Set: this entry stands for `count` connections to the same host and port with the same
   * verdict, between a run's first and last ones (CappedConnections): its time is the first's,
   * its bytes are their sum.
   */
  count?: number;
}

/** Connections kept per run, at most: the sum of the four parts below (the run record holds no more). */
export const MAX_RECORDED_CONNECTIONS = 2000;
/**
 * A run's first connections, kept as they came: what the program set out to do, and for most
 * programs the whole record. Refused ones among them up to MAX_RECORDED_BLOCKED.
 */
export const RECORDED_FIRST = 1000;
/**
 * Refused connections among the first ones: a flood of refused requests (any name can be made
 * up) cannot push the allowed ones out of them.
 */
export const MAX_RECORDED_BLOCKED = 200;
/**
 * A run's last connections, kept as they came, whatever came before: a program that pads its
 * record with thousands of connections still has what it did at its end (an upload) in it.
 */
export const RECORDED_LAST = 300;
/**
 * Between the first and the last: one entry per host, port and verdict, with how many connections
 * it stands for and their bytes summed, so that every host reached stays in the record. Allowed
 * ones: an allow-list names a few hosts, and a wildcard's names have to resolve to be reached.
 */
export const RECORDED_HOSTS_ALLOWED = 500;
/** The same for refused ones, fewer: a refused name costs a program nothing to make up. */
export const RECORDED_HOSTS_BLOCKED = 200;

/**
 * Connections kept within the caps, listed in the order given: the first RECORDED_FIRST (refused
 * ones among them up to MAX_RECORDED_BLOCKED), the last RECORDED_LAST, and those in between as
 * one entry per host, port and verdict (RECORDED_HOSTS_ALLOWED and RECORDED_HOSTS_BLOCKED of
 * them) where its host first came; what is left after that is counted. One rule for a call's own record and for a call's record
 * joined with the replay that rebuilt its state.
 */
export class CappedConnections {
  /** Each kept entry with its place in the order given: the record lists them in that order. */
  private readonly first: Kept[] = [];
  private firstBlocked = 0;
  private readonly last: Kept[] = [];
  /** The entries between first and last, by hostKey; each at the place its host first came. */
  private readonly hosts = new Map<string, Kept>();
  private readonly hostCount = { allowed: 0, blocked: 0 };
  private readonly omitted = { allowed: 0, blocked: 0 };
  private given = 0;

  keep(c: Connection): void {
    const kept = { at: this.given++, c };
    if (this.first.length < RECORDED_FIRST && (c.allowed || this.firstBlocked < MAX_RECORDED_BLOCKED)) {
      this.first.push(kept);
      if (!c.allowed) this.firstBlocked++;
      return;
    }
    this.last.push(kept);
    if (this.last.length > RECORDED_LAST) this.between(this.last.shift()!);
  }

  count(omitted: { allowed: number; blocked: number }): void {
    this.omitted.allowed += omitted.allowed;
    this.omitted.blocked += omitted.blocked;
  }

  activity(complete: boolean): NetworkActivity {
    const omitted = this.omitted.allowed + this.omitted.blocked > 0 ? { omitted: { ...this.omitted } } : {};
    const connections = [...this.first, ...this.hosts.values(), ...this.last].sort((a, b) => a.at - b.at).map((k) => k.c);
    return { connections, complete, ...omitted };
  }

  /** A connection no longer among the last ones: added to its host's entry, or counted. */
  private between({ at, c }: Kept): void {
    const key = hostKey(c);
    const entry = this.hosts.get(key)?.c;
    const kind = c.allowed ? 'allowed' : 'blocked';
    if (entry) {
      entry.count = connectionCount(entry) + connectionCount(c);
      entry.bytesOut += c.bytesOut;
      entry.bytesIn += c.bytesIn;
    } else if (this.hostCount[kind] < (c.allowed ? RECORDED_HOSTS_ALLOWED : RECORDED_HOSTS_BLOCKED)) {
      this.hosts.set(key, { at, c: { ...c, count: connectionCount(c) } });
      this.hostCount[kind]++;
    } else {
      this.omitted[kind] += connectionCount(c);
    }
  }
}

interface Kept {
  at: number;
  c: Connection;
}

/** What makes connections one entry: the same host and port, verdict, method, state and maker. */
function hostKey(c: Connection): string {
  return JSON.stringify([c.host, c.port, c.method, c.allowed, c.reason ?? '', c.open === true, c.replayOf ?? '']);
}

/** How many connections an entry stands for. */
export function connectionCount(c: Connection): number {
  return c.count ?? 1;
}

/**
 * Records joined in order (a replay's runs, then the call's own), under the same caps; undefined
 * when none was made (a sandbox without a network). Whole only when every part was.
 */
export function joinActivity(parts: readonly (NetworkActivity | undefined)[]): NetworkActivity | undefined {
  const given = parts.filter((p): p is NetworkActivity => p !== undefined);
  if (given.length === 0) return undefined;
  if (given.length === 1) return given[0];
  const kept = new CappedConnections();
  for (const part of given) {
    part.connections.forEach((c) => kept.keep(c));
    if (part.omitted) kept.count(part.omitted);
  }
  return kept.activity(given.every((p) => p.complete));
}

/** A run's connections, and whether the record is whole. */
export interface NetworkActivity {
  connections: Connection[];
  /** False when the proxy's log could not be read to the end of the run (the record may miss some). */
  complete: boolean;
  /** Connections past the caps (CappedConnections), in no entry: counted (allowed, blocked), not kept. */
  omitted?: { allowed: number; blocked: number };
}

/** The names refused, each once, in the order first refused. */
export function blockedHosts(connections: readonly Connection[]): string[] {
  return [...new Set(connections.filter((c) => !c.allowed).map((c) => c.host))];
}

/** "network: 3 allowed, 1 blocked: other.example": a run's network at a glance (the sidebar, the CLI). */
export function networkSummary(activity: NetworkActivity): string {
  const sum = (keep: (c: Connection) => boolean) => activity.connections.filter(keep).reduce((n, c) => n + connectionCount(c), 0);
  const allowed = sum((c) => c.allowed) + (activity.omitted?.allowed ?? 0);
  const blocked = blockedHosts(activity.connections);
  const refused = sum((c) => !c.allowed) + (activity.omitted?.blocked ?? 0);
  const parts = [`${allowed} allowed`];
  if (refused > 0) parts.push(`${refused} blocked: ${blocked.join(', ')}`);
  const open = sum((c) => c.open === true);
  if (open > 0) parts.push(`${open} still open`);
  return `network: ${parts.join(', ')}${activity.complete ? '' : ' (the record may be incomplete)'}`;
}

/** One connection as a line of "Show Program and Output" and the CLI's --verbose. */
export function connectionLine(c: Connection): string {
  const when = new Date(c.time).toISOString().slice(11, 23);
  const added = c.credential ? `, credential added for ${c.host}` : '';
  const verdict = c.allowed ? `allowed${c.serverAddress ? ` (to ${c.serverAddress})` : ''}${added}` : `blocked (${reasonText(c)})`;
  const by = c.replayOf ? `, by kept run ${c.replayOf} re-run to rebuild the state` : '';
  const many = connectionCount(c) > 1 ? `${connectionCount(c)} connections from then on, ` : '';
  const bytes = `${c.bytesOut} bytes out, ${c.bytesIn} bytes in${many ? ' in all' : ''}`;
  return `${when} ${c.method} ${c.host}:${c.port} ${verdict}, ${many}${c.open ? 'still open when the call ended' : bytes}${by}`;
}

function reasonText(c: Connection): string {
  switch (c.reason) {
    case 'denied':
      return 'on the deny-list';
    case 'address':
      return 'an IP address, not a name';
    case 'private address':
      return 'resolves to a private or loopback address';
    case 'port':
      return `port ${c.port} is not allowed`;
    case 'sni':
      return `the TLS hello named ${c.sni ?? 'another server'}`;
    case 'not tls':
      return 'not TLS';
    case 'scheme':
      return 'only http:// and HTTPS tunnels are allowed';
    case 'not https':
      return 'a credential is bound to it, so only HTTPS goes there';
    case 'malformed':
      return 'a request that could be read two ways: a second Host header, a folded header, conflicting lengths, a dot segment or an upgrade';
    case 'stand-in':
      return "a placeholder's stand-in sent where its credential is not bound";
    case 'upstream':
      return "the server could not be reached or its certificate not verified against the system's trust store";
    default:
      return 'not on the allow-list';
  }
}

/**
 * The sentence the model gets when the proxy refused something, one clause per name. `allowSetting`
 * is how this user adds a name ("the codeactSandbox.network.allow setting", "--allow-domain").
 */
export function blockedNote(connections: readonly Connection[], allowSetting: string): string | undefined {
  const seen = new Set<string>();
  const clauses: string[] = [];
  let unlisted = false;
  for (const c of connections) {
    const key = `${c.host}\0${c.reason}\0${c.replayOf === undefined}`;
    if (c.allowed || seen.has(key)) continue;
    seen.add(key);
    if (c.reason === 'not listed' || c.reason === undefined) unlisted = true;
    // A name refused while an earlier kept call was re-run is said so: the program did not ask for it.
    clauses.push(`${c.host} (${reasonText(c)}${c.replayOf === undefined ? '' : ', while an earlier kept call was re-run'})`);
  }
  if (clauses.length === 0) return undefined;
  const ask = unlisted ? ` If the program needs a name that is not on the allow-list, ask the user to add it to ${allowSetting}.` : '';
  return `The sandbox's network proxy blocked: ${clauses.join(', ')}.${ask} Do not try to get around the proxy: nothing else leaves the sandbox.`;
}
