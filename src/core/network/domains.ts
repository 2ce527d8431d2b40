/**
 * The network allow-list's patterns: what a user may write (`index.example.org`, `*.assets.example`)
 * and what a name a program asks for is judged against. A bad allow pattern is reported and
 * dropped, never widened: a scheme, path, port, space, IP address, a lone `*`, a wildcard over a
 * public suffix, or any character no domain name has. A bad deny pattern turns the network off:
 * dropping it would widen what is allowed.
 */
import { domainToASCII } from 'node:url';
import { isIP } from 'node:net';
import { parse as parseDomain } from 'tldts';

/** A valid pattern: a domain (`index.example.org`), or `*.` and a domain of at least two labels (its subdomains). */
export interface DomainPattern {
  /** As the user wrote it, for sentences. */
  text: string;
  /** The domain in ASCII (punycode), lower case, without a trailing dot. */
  domain: string;
  /** `*.domain`: any name under it, not the domain itself. */
  subdomains: boolean;
}

export interface DomainLists {
  allow: DomainPattern[];
  deny: DomainPattern[];
  /** One sentence per pattern dropped or read in another form, naming the setting it came from. */
  problems: string[];
  /** A deny pattern could not be read: the lists give no network at all (policyOf). */
  denyInvalid: boolean;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
/** What a domain is made of once in ASCII: nothing else reaches the proxy's configuration. */
const ASCII_NAME = /^[a-z0-9.-]+$/;
/** What may go into the IDN step: letters, marks, digits, dots and hyphens. `\`, `?`, `#`, `@`, `%` cut or change a name there. */
const UNICODE_NAME = /^[\p{L}\p{M}\p{N}.-]+$/u;

/**
 * Names under these answer with whatever address the name spells (`203.0.113.9.nip.io`): a
 * wildcard over one is a wildcard over every public address. They are not in the public suffix
 * list, so they are named here.
 */
const ADDRESS_ECHO_DOMAINS = new Set(['nip.io', 'sslip.io', 'xip.io', 'traefik.me', 'localtest.me', 'lvh.me']);

/** A name in ASCII, lower case, without its trailing dot, and whether an IDN step made it; undefined: not a domain name. */
function toAscii(name: string): { ascii: string; idn: boolean } | undefined {
  const trimmed = name.replace(/\.$/, '');
  const idn = /[^\x00-\x7f]/.test(trimmed);
  if (idn && !UNICODE_NAME.test(trimmed)) return undefined;
  const ascii = (idn ? domainToASCII(trimmed) : trimmed).toLowerCase();
  if (ascii === '' || ascii.length > 253 || !ASCII_NAME.test(ascii)) return undefined;
  return ascii.split('.').every((label) => LABEL.test(label)) ? { ascii, idn } : undefined;
}

/** Why `raw` is not a domain pattern, or undefined when it is one. */
export function patternProblem(raw: string): string | undefined {
  const text = raw.trim();
  if (text === '') return 'is empty';
  if (/\s/.test(text)) return 'has a space in it';
  if (text.includes('://')) return 'has a scheme (write the domain alone, as index.example.org)';
  if (text.includes('/')) return 'has a path (write the domain alone, as index.example.org)';
  if (text === '*' || text === '*.') return 'would allow every domain (name the domains)';
  if (isIP(text.replace(/^\[|\]$/g, '')) !== 0) return 'is an IP address (name a domain: addresses are never allowed)';
  if (/:\d*$/.test(text)) return 'has a port (write the domain alone; ports 80 and 443 are allowed)';
  const body = text.startsWith('*.') ? text.slice(2) : text;
  if (body.includes('*')) return 'has a * that is not its first label (write *.example.com)';
  const odd = [...body].find((c) => !/[\p{L}\p{M}\p{N}.-]/u.test(c));
  if (odd !== undefined) return `has ${JSON.stringify(odd)}, which no domain name has`;
  const name = toAscii(body);
  if (name === undefined) return 'is not a domain name';
  const domain = name.ascii;
  if (isIP(domain) !== 0 || /^[0-9.]+$/.test(domain)) return 'is an IP address (name a domain: addresses are never allowed)';
  if (text.startsWith('*.')) {
    if (!domain.includes('.')) return 'would allow a whole top-level domain (name the domains)';
    if (ADDRESS_ECHO_DOMAINS.has(domain)) return `would allow every address (names under ${domain} lead to the address they spell; name the domains)`;
    if (parseDomain(domain, { allowPrivateDomains: true }).publicSuffix === domain) {
      return `would allow every domain under ${domain}, where anyone can register one (name the domains)`;
    }
  }
  return undefined;
}

/** The valid patterns of `raw`, and a sentence for each one dropped or read as punycode (`setting` names where it came from). */
export function parsePatterns(raw: readonly string[], setting: string, onInvalid = 'it is ignored'): { patterns: DomainPattern[]; problems: string[]; invalid: number } {
  const patterns: DomainPattern[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  let invalid = 0;
  for (const entry of raw) {
    const problem = patternProblem(entry);
    if (problem !== undefined) {
      problems.push(`${setting}: ${JSON.stringify(entry)} ${problem}; ${onInvalid}.`);
      invalid++;
      continue;
    }
    const text = entry.trim();
    const subdomains = text.startsWith('*.');
    const { ascii: domain, idn } = toAscii(subdomains ? text.slice(2) : text)!;
    const key = `${subdomains ? '*.' : ''}${domain}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (idn) {
      problems.push(
        `${setting}: ${JSON.stringify(entry)} is not plain ASCII; it is read as ${key}. Letters of other scripts can look like ASCII ones: check that this is the domain you meant.`,
      );
    }
    patterns.push({ text, domain, subdomains });
  }
  return { patterns, problems, invalid };
}

/** Both lists, checked; an empty allow-list (after dropping bad patterns), or a bad deny pattern, means no network. */
export function domainLists(allow: readonly string[], deny: readonly string[], settings = { allow: 'network.allow', deny: 'network.deny' }): DomainLists {
  const a = parsePatterns(allow, settings.allow);
  const d = parsePatterns(deny, settings.deny, 'the sandbox has no network until it is corrected (dropping it would allow what it denies)');
  return { allow: a.patterns, deny: d.patterns, problems: [...a.problems, ...d.problems], denyInvalid: d.invalid > 0 };
}

function matches(pattern: DomainPattern, host: string): boolean {
  return pattern.subdomains ? host.endsWith(`.${pattern.domain}`) : host === pattern.domain;
}

export type Verdict = { allowed: true; by: DomainPattern } | { allowed: false; reason: 'denied'; by: DomainPattern } | { allowed: false; reason: 'not listed' | 'not a name' };

/** Whether a program may reach `host` (a name, as a CONNECT or a Host header gives it): the deny-list wins. */
export function judge(lists: Pick<DomainLists, 'allow' | 'deny'>, host: string): Verdict {
  const name = toAscii(host.trim().toLowerCase())?.ascii;
  if (name === undefined || isIP(host.replace(/^\[|\]$/g, '')) !== 0 || /^[0-9.]+$/.test(name)) return { allowed: false, reason: 'not a name' };
  const denied = lists.deny.find((p) => matches(p, name));
  if (denied) return { allowed: false, reason: 'denied', by: denied };
  const allowed = lists.allow.find((p) => matches(p, name));
  return allowed ? { allowed: true, by: allowed } : { allowed: false, reason: 'not listed' };
}
