/** The opt-in network: the allow- and deny-lists, the policy a sandbox is made for, and what a run did on it. */
export { domainLists, judge, parsePatterns, patternProblem, type DomainLists, type DomainPattern, type Verdict } from './domains';
export { allowedText, canonicalPattern, networkNote, networkPolicy, policyDigest, policyOf, type NetworkPolicy } from './policy';
export { CappedConnections, MAX_RECORDED_BLOCKED, MAX_RECORDED_CONNECTIONS, RECORDED_FIRST, RECORDED_HOSTS_ALLOWED, RECORDED_HOSTS_BLOCKED, RECORDED_LAST, blockedHosts, connectionCount, joinActivity, blockedNote, connectionLine, networkSummary, type BlockReason, type Connection, type NetworkActivity } from './activity';
