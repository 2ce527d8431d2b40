/** The opt-in network: the allow- and deny-lists, the policy a sandbox is made for, and what a run did on it. */
export { domainLists, judge, parsePatterns, patternProblem, type DomainLists, type DomainPattern, type Verdict } from './domains';
export { allowedText, canonicalPattern, networkNote, networkPolicy, policyDigest, policyOf, type NetworkPolicy } from './policy';
export { CappedConnections, MAX_RECORDED_BLOCKED, MAX_RECORDED_CONNECTIONS, blockedHosts, joinActivity, blockedNote, connectionLine, networkSummary, type BlockReason, type Connection, type NetworkActivity } from './activity';
