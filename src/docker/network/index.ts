/**
 * The opt-in network: a sandbox whose only way out is a proxy (Debian's squid) that allows the
 * listed names, refuses private addresses, checks a TLS hello's server name, and logs every
 * connection, read back per run. On Docker, an internal network per sandbox that only its policy's
 * shared proxy joins (egress.ts); on Podman, a proxy per sandbox whose namespace the sandbox joins
 * (sidecar.ts). Either way a sandbox has no peer but its proxy.
 */
export { NetworkUnavailableError } from './errors';
export { egressNames, ensureEgress, sandboxNetworkName, hostAddress, proxyEnv, releaseEgress, releaseIdleEgress, type Egress, type EgressTarget } from './egress';
export { NETWORK_LABEL, proxyRunning } from './proxyContainer';
export { makeSidecar, removeSidecar, releaseIdleSidecars, sidecarEgress, sidecarName } from './sidecar';
export { runActivity, startMark, type RunMark } from './runActivity';
export { removeLeftoverProbes } from './probe';
export { parseLogLine, type LogEntry } from './accessLog';
export { LOG_TAG, MARK_DOMAIN, NEVER_REACHED, PROXY_PORT, patternRegex, squidConfig } from './squidConfig';
