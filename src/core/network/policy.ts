/**
 * Which domains a sandbox may reach, as the sandbox is made for it: the checked lists of the
 * settings (`network.allow`, `network.deny`), in one canonical form so two windows or processes
 * with the same lists share one proxy, and a sandbox made for other lists is not reused.
 */
import { createHash } from 'node:crypto';
import { domainLists, type DomainLists, type DomainPattern } from './domains';

export interface NetworkPolicy {
  /** Canonical patterns (`index.example.org`, `*.assets.example`), sorted, never empty. */
  allow: readonly string[];
  /** Canonical patterns; a name matching one is refused even when allowed. */
  deny: readonly string[];
}

/** How a pattern is written in the policy: ASCII, lower case, `*.` for subdomains. */
export function canonicalPattern(p: DomainPattern): string {
  return `${p.subdomains ? '*.' : ''}${p.domain}`;
}

/** The policy the lists give, or undefined when nothing valid is allowed or a deny pattern is unreadable (no network at all). */
export function policyOf(lists: Pick<DomainLists, 'allow' | 'deny'> & Partial<Pick<DomainLists, 'denyInvalid'>>): NetworkPolicy | undefined {
  if (lists.allow.length === 0 || lists.denyInvalid) return undefined;
  const sorted = (ps: DomainPattern[]) => [...new Set(ps.map(canonicalPattern))].sort();
  return { allow: sorted(lists.allow), deny: sorted(lists.deny) };
}

/**
 * The settings' raw lists, checked: the policy (undefined: no network), a sentence per pattern
 * dropped or read in another form, and whether an unreadable deny pattern is what turned it off.
 */
export function networkPolicy(
  allow: readonly string[],
  deny: readonly string[],
  settings?: { allow: string; deny: string },
): { policy: NetworkPolicy | undefined; problems: string[]; denyInvalid: boolean } {
  const lists = domainLists(allow, deny, settings);
  return { policy: policyOf(lists), problems: lists.problems, denyInvalid: lists.denyInvalid };
}

/** A short stable digest of a policy (and what else makes a proxy different), for names and labels. */
export function policyDigest(policy: NetworkPolicy, extra = ''): string {
  return createHash('sha256').update(JSON.stringify([policy.allow, policy.deny, extra])).digest('hex').slice(0, 12);
}

/** "index.example.org, *.assets.example": the allow-list as sentences name it. */
export function allowedText(policy: NetworkPolicy): string {
  return policy.allow.join(', ');
}

/**
 * What the model is told with the first result of a sandbox that has a network: that it has one,
 * to which names, and how programs reach it.
 */
export function networkNote(policy: NetworkPolicy): string {
  const never = policy.deny.length ? ` (never ${policy.deny.join(', ')})` : '';
  return `This sandbox has network access to these domains only: ${policy.allow.join(', ')}${never}, on ports 80 and 443, through a proxy that urllib, requests, pip and curl use by themselves (HTTP_PROXY and HTTPS_PROXY are set). Every other name is refused.`;
}
