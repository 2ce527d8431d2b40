/**
 * The proxy's configuration, as text, from the policy: squid (Debian's squid-openssl) filters
 * each request by the name it asks for, refuses names that resolve to loopback, private,
 * link-local or metadata addresses, peeks at a tunnel's TLS client hello to check its server
 * name, and logs every connection in one line we parse (accessLog.ts). Nothing here talks to an
 * engine; the text is unit-tested as it is.
 */
import type { NetworkPolicy } from '../../core/network';

/** Where squid listens in its container; sandboxes reach it on the internal network. */
export const PROXY_PORT = 3128;
/** The marker a call sends at its end (accessLog.ts): refused at once, never resolved. */
export const MARK_DOMAIN = 'codeact-mark.invalid';
/** The note squid logs with each request: why it was allowed or refused. */
const WHY = 'codeact_why';
/** The access log's format name and the first word of each of its lines. */
export const LOG_TAG = 'codeact-net';

/**
 * Addresses a name may never lead to, even when it is allowed: "this" network, private ranges,
 * shared address space, loopback, link-local (cloud metadata lives there), IETF protocol
 * assignments, benchmarking, multicast and reserved; IPv6 loopback, unique-local, link-local and
 * multicast. squid keeps IPv4 addresses in their IPv4-mapped IPv6 form, so the IPv4 ranges cover
 * those forms too (and a range such as ::ffff:0:0/96 would be every IPv4 address).
 */
export const NEVER_REACHED = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12',
  '192.0.0.0/24', '192.168.0.0/16', '198.18.0.0/15', '224.0.0.0/3',
  '::/128', '::1', 'fc00::/7', 'fe80::/10', 'ff00::/8',
  // Addresses that carry an IPv4 address inside an IPv6 one: NAT64 and 6to4.
  '64:ff9b::/96', '64:ff9b:1::/48', '2002::/16',
];

export interface ProxyConfigInput {
  policy: NetworkPolicy;
  /**
   * Who may use the proxy. `only`: these sources (Podman: the loopback of the namespace a sandbox
   * shares). `except`: every source but these (Docker: the proxy joins each sandbox's own internal
   * network as it is made, so the sandboxes' subnets are not known when squid starts; what it must
   * never serve is its outside network, where the host and other containers are).
   */
  clients: { only: string } | { except: readonly string[] };
  /**
   * Tests only: private addresses the proxy may reach (the test servers' network). Never set by
   * the extension, the CLI or the MCP server.
   */
  reachable?: readonly string[];
  /** Where squid listens: every address of its container (default), or one, such as loopback. */
  listen?: string;
  /** Tests only: a hosts file squid reads instead of /etc/hosts (names only the tests' proxy resolves). */
  hostsFile?: string;
  /**
   * Hosts a credential is bound to: their tunnels go to the credential forwarder on this
   * container's loopback (squid's parent for them), and plain http:// to them is refused. The
   * stand-ins of placeholder bindings, with the headers they are sent in: a plain request that
   * carries one (in its URL or those headers) is refused, wherever it goes.
   */
  credentials?: { hosts: readonly string[]; standIns: readonly string[]; headers: readonly string[]; port: number };
}

/** A pattern as a POSIX regular expression on the host: `x.y` exactly, `*.x.y` any name under it. */
export function patternRegex(pattern: string): string {
  const sub = pattern.startsWith('*.');
  const escaped = (sub ? pattern.slice(2) : pattern).replace(/\./g, '\\.');
  return sub ? `\\.${escaped}$` : `^${escaped}$`;
}

function why(name: string, value: string): string {
  return `acl why_${name} annotate_transaction ${WHY}=${value}`;
}

/** squid.conf for one policy. */
export function squidConfig(input: ProxyConfigInput): string {
  const allow = input.policy.allow.map(patternRegex).join(' ');
  const deny = input.policy.deny.map(patternRegex).join(' ');
  const reachable = input.reachable ?? [];
  const cred = input.credentials && input.credentials.hosts.length > 0 ? input.credentials : undefined;
  // Stand-ins are hex after a fixed prefix (newStandIn): nothing in them is special to a regex.
  const standIns = cred?.standIns.filter((s) => /^[a-z0-9-]+$/.test(s)) ?? [];
  const standInHeaders = standIns.length ? [...new Set(cred!.headers.filter((h) => /^[A-Za-z0-9-]+$/.test(h)))] : [];
  return [
    '# CodeAct Sandbox network proxy. Generated from the allow- and deny-lists.',
    `http_port ${input.listen ? `${input.listen}:` : ''}${PROXY_PORT} ssl-bump cert=/run/codeact-proxy/peek.pem generate-host-certificates=off`,
    'pid_filename none',
    ...(input.hostsFile ? [`hosts_file ${input.hostsFile}`] : []),
    'coredump_dir /run/codeact-proxy',
    'pinger_enable off',
    'cache deny all',
    'cache_mem 0 MB',
    'memory_pools off',
    // Big enough that a name's addresses stay cached between the address check and the connect.
    'ipcache_size 4096',
    'fqdncache_size 0',
    'shutdown_lifetime 1 seconds',
    'via off',
    'forwarded_for delete',
    'httpd_suppress_version_string on',
    // One sandbox cannot take the shared proxy down by opening connections without end.
    'max_filedescriptors 8192',
    'client_ip_max_connections 256',
    // No other service: no ICP, HTCP or SNMP port.
    'icp_port 0',
    'htcp_port 0',
    'snmp_port 0',
    'cache_log /dev/stderr',
    'cache_store_log none',
    'logfile_rotate 0',
    // time, client address and port (a tunnel's acceptance and end share them), method, host,
    // port, status, bytes in (to the client), bytes out (from it), squid's verdict, our reason,
    // the TLS step's action, the server address squid connected to, the client hello's server
    // name. The host and server name are the client's own bytes: URL-escaped (%#), so they hold
    // no space or newline, and cut at 256 characters, so a flood of long names cannot push lines
    // out early.
    `logformat ${LOG_TAG} ${LOG_TAG} %ts.%03tu %>a %>p %rm %#.256>rd %>rP %>Hs %<st %>st %Ss %{${WHY}}note %ssl::bump_mode %<a %#.256ssl::>sni`,
    `access_log stdio:/dev/stdout logformat=${LOG_TAG}`,
    '',
    ...('only' in input.clients ? [`acl sandboxes src ${input.clients.only}`] : [`acl outside src ${input.clients.except.join(' ')}`]),
    'acl CONNECT method CONNECT',
    'acl web_port port 80',
    'acl tls_port port 443',
    // -n on every name ACL: a request naming an address is never looked up backwards (a PTR
    // query of an address the program chose would carry its data out).
    `acl mark dstdomain -n .${MARK_DOMAIN}`,
    'acl http_scheme proto HTTP',
    `acl allowed dstdom_regex -n -i ${allow}`,
    ...(deny ? [`acl denied dstdom_regex -n -i ${deny}`] : []),
    `acl never_reached dst ${NEVER_REACHED.join(' ')}`,
    ...(reachable.length ? [`acl test_reachable dst ${reachable.join(' ')}`] : []),
    why('source', 'source'),
    why('mark', 'mark'),
    why('port', 'port'),
    why('scheme', 'scheme'),
    why('denied', 'denied'),
    why('unlisted', 'unlisted'),
    why('private', 'private'),
    why('allowed', 'allowed'),
    // A refused tunnel is reset: an error page would have to be served inside TLS, with a
    // certificate no client trusts. The reason is in the log, and the model gets it from there.
    ...(cred
      ? [
          `acl bound dstdom_regex -n -i ${cred.hosts.map(patternRegex).join(' ')}`,
          why('plain_bound', 'plain_bound'),
          ...(standIns.length ? [`acl standin_url url_regex ${standIns.join(' ')}`, why('standin', 'standin')] : []),
          ...standInHeaders.map((h, i) => `acl standin_header_${i} req_header ${h} ${standIns.join(' ')}`),
        ]
      : []),
    why('tunnel_port', 'port'),
    why('tunnel_denied', 'denied'),
    why('tunnel_unlisted', 'unlisted'),
    why('tunnel_private', 'private'),
    'deny_info TCP_RESET why_tunnel_port',
    'deny_info TCP_RESET why_tunnel_denied',
    'deny_info TCP_RESET why_tunnel_unlisted',
    'deny_info TCP_RESET why_tunnel_private',
    '',
    'only' in input.clients ? 'http_access deny !sandboxes why_source' : 'http_access deny outside why_source',
    // The cache manager (cache_object://, whatever the host) would show other sandboxes' requests.
    'http_access deny manager why_scheme',
    'http_access deny mark why_mark',
    // Plain requests are http:// only (no ftp://, gopher://, whois://, urn:).
    'http_access deny !CONNECT !http_scheme why_scheme',
    'http_access deny CONNECT !tls_port why_tunnel_port',
    'http_access deny !CONNECT !web_port why_port',
    ...(deny ? ['http_access deny CONNECT denied why_tunnel_denied', 'http_access deny denied why_denied'] : []),
    'http_access deny CONNECT !allowed why_tunnel_unlisted',
    'http_access deny !allowed why_unlisted',
    // The credential's hosts: HTTPS only, so that the forwarder sees, checks and completes each request.
    ...(cred ? ['http_access deny !CONNECT bound why_plain_bound'] : []),
    ...(standIns.length ? ['http_access deny !CONNECT standin_url why_standin', ...standInHeaders.map((_, i) => `http_access deny !CONNECT standin_header_${i} why_standin`)] : []),
    ...(reachable.length ? ['http_access allow test_reachable why_allowed'] : []),
    'http_access deny CONNECT never_reached why_tunnel_private',
    'http_access deny never_reached why_private',
    'http_access allow all why_allowed',
    '',
    // The client hello must name an allowed server (and not a denied one); the tunnel is then
    // spliced, never decrypted. Without a server name, the CONNECT's host (already allowed) counts.
    'acl step1 at_step SslBump1',
    ...(cred
      ? [
          // A bound host's tunnel is not peeked at by squid: the forwarder terminates its TLS with
          // the sandbox's own leaf (and checks the hello's name itself), and squid sends it there.
          `cache_peer 127.0.0.1 parent ${cred.port} 0 no-query no-digest no-netdb-exchange name=credentials`,
          'cache_peer_access credentials allow CONNECT bound',
          'cache_peer_access credentials deny all',
          'never_direct allow CONNECT bound',
          'ssl_bump splice step1 bound',
        ]
      : []),
    `acl hello_allowed ssl::server_name_regex -i ${allow}`,
    ...(deny ? [`acl hello_denied ssl::server_name_regex -i ${deny}`] : []),
    why('sni', 'sni'),
    'ssl_bump peek step1',
    `ssl_bump splice hello_allowed${deny ? ' !hello_denied' : ''}`,
    'ssl_bump terminate all why_sni',
    '',
  ].join('\n');
}
