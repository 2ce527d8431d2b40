/**
 * The network allow-list's patterns: what a user may write (`index.example.org`, `*.assets.example`)
 * and what a name a program asks for is judged against. A bad pattern is reported and dropped,
 * never widened: a scheme, path, port, space, IP address or a lone `*` names no domain.
 */
import { domainToASCII } from 'node:url';
import { isIP } from 'node:net';

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
  /** One sentence per pattern dropped, naming the setting it came from. */
  problems: string[];
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

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
  const domain = toAscii(body);
  if (domain === undefined) return 'is not a domain name';
  if (isIP(domain) !== 0 || /^[0-9.]+$/.test(domain)) return 'is an IP address (name a domain: addresses are never allowed)';
  if (text.startsWith('*.') && !domain.includes('.')) return 'would allow a whole top-level domain (name the domains)';
  return undefined;
}

function toAscii(name: string): string | undefined {
  const ascii = domainToASCII(name.replace(/\.$/, ''));
  if (ascii === '' || ascii.length > 253) return undefined;
  return ascii.split('.').every((label) => LABEL.test(label)) ? ascii : undefined;
}

/** The valid patterns of `raw`, and a sentence for each one dropped (`setting` names where it came from). */
export function parsePatterns(raw: readonly string[], setting: string): { patterns: DomainPattern[]; problems: string[] } {
  const patterns: DomainPattern[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const entry of raw) {
    const problem = patternProblem(entry);
    if (problem !== undefined) {
      problems.push(`${setting}: ${JSON.stringify(entry)} ${problem}; it is ignored.`);
      continue;
    }
    const text = entry.trim();
    const subdomains = text.startsWith('*.');
    const domain = toAscii(subdomains ? text.slice(2) : text)!;
    const key = `${subdomains ? '*.' : ''}${domain}`;
    if (seen.has(key)) continue;
    seen.add(key);
    patterns.push({ text, domain, subdomains });
  }
  return { patterns, problems };
}

/** Both lists, checked; an empty allow-list (after dropping bad patterns) means no network. */
export function domainLists(allow: readonly string[], deny: readonly string[], settings = { allow: 'network.allow', deny: 'network.deny' }): DomainLists {
  const a = parsePatterns(allow, settings.allow);
  const d = parsePatterns(deny, settings.deny);
  return { allow: a.patterns, deny: d.patterns, problems: [...a.problems, ...d.problems] };
}

function matches(pattern: DomainPattern, host: string): boolean {
  return pattern.subdomains ? host.endsWith(`.${pattern.domain}`) : host === pattern.domain;
}

export type Verdict = { allowed: true; by: DomainPattern } | { allowed: false; reason: 'denied'; by: DomainPattern } | { allowed: false; reason: 'not listed' | 'not a name' };

/** Whether a program may reach `host` (a name, as a CONNECT or a Host header gives it): the deny-list wins. */
export function judge(lists: Pick<DomainLists, 'allow' | 'deny'>, host: string): Verdict {
  const name = toAscii(host.trim().toLowerCase());
  if (name === undefined || isIP(host.replace(/^\[|\]$/g, '')) !== 0 || /^[0-9.]+$/.test(name)) return { allowed: false, reason: 'not a name' };
  const denied = lists.deny.find((p) => matches(p, name));
  if (denied) return { allowed: false, reason: 'denied', by: denied };
  const allowed = lists.allow.find((p) => matches(p, name));
  return allowed ? { allowed: true, by: allowed } : { allowed: false, reason: 'not listed' };
}
