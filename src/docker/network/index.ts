/**
 * The opt-in network: an internal network per policy whose only way out is a proxy (Debian's
 * squid) that allows the listed names, refuses private addresses, checks a TLS hello's server
 * name, and logs every connection, read back per run.
 */
export { NetworkUnavailableError } from './errors';
export { NETWORK_LABEL, egressNames, ensureEgress, hostAddress, proxyEnv, proxyRunning, releaseEgress, releaseIdleEgress, type Egress, type EgressTarget } from './egress';
export { runActivity, type RunMark } from './runActivity';
export { parseLogLine, type LogEntry } from './accessLog';
export { LOG_TAG, MARK_DOMAIN, NEVER_REACHED, PROXY_PORT, patternRegex, squidConfig } from './squidConfig';
