/**
 * A sandbox's way out, when its settings allow any: an internal network (no gateway, no route to
 * the host) whose only other member is the proxy, itself also on the engine's default network.
 * One network and one proxy per engine and policy, named by the policy's digest, so every window
 * and process with the same lists shares them, and they are found again after a reload. The
 * proxy keeps one address for the network's life (a subnet the engine chose, then pinned), so a
 * proxy brought back after it died is where the sandboxes' proxy variables say. This is Docker's
 * way out; Podman's is sidecar.ts.
 */
import type Dockerode from 'dockerode';
import { ToolError, describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { LABEL, networkDigest, type SandboxNetwork } from '../container';
import { ENGINE_DEADLINE_MS, engineFailure, isEngineFailure, statusCode, withDeadline, type EngineKind } from '../engine';
import { ensureProxyImage } from '../images';
import { NetworkUnavailableError } from './errors';
import { NETWORK_LABEL, egressLabels, proxyContainerOptions, waitReady } from './proxyContainer';
import { releaseIdleSidecars } from './sidecar';
import { PROXY_PORT } from './squidConfig';

/** A sandbox network's policy and, for tests, where its "internet" is. */
export type EgressTarget = SandboxNetwork;

export interface Egress {
  digest: string;
  /** What the sandbox's NetworkMode names: the internal network (Docker), or `container:<proxy>` (Podman). */
  network: string;
  proxyName: string;
  /** The proxy's address as the sandbox reaches it: on the internal network, or loopback. */
  proxyAddress: string;
  /** When the running proxy started (the engine's word): another value is another proxy, with a log of its own. */
  startedAt?: string;
}

export function egressNames(target: EgressTarget): { digest: string; network: string; proxy: string } {
  const digest = networkDigest(target);
  return { digest, network: `codeact-net-${digest}`, proxy: `codeact-proxy-${digest}` };
}

/** What a program's environment says about the proxy: urllib, requests, pip and curl use it unchanged. */
export function proxyEnv(egress: Pick<Egress, 'proxyAddress'>): string[] {
  const url = `http://${egress.proxyAddress}:${PROXY_PORT}`;
  return ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY'].flatMap((k) => [`${k}=${url}`, `${k.toLowerCase()}=${url}`]);
}

export interface EnsureEgressOptions {
  docker: Dockerode;
  engine: EngineKind;
  target: EgressTarget;
  log: Logger;
  signal?: AbortSignal;
  /** Where the user finds the proxy build's log. */
  logHint: string;
  /** The version of whoever makes the network and proxy, labelled on them as on its sandboxes. */
  version?: string;
}

/** Egress this process saw ready, with when its proxy started: one inspect tells it is the same proxy. */
const seenReady = new WeakMap<Dockerode, Map<string, { egress: Egress; startedAt: string }>>();

/** The policy's network and a running proxy on it: found, started again, or made. */
export async function ensureEgress(o: EnsureEgressOptions): Promise<Egress> {
  try {
    return await ensureEgressNow(o);
  } catch (e) {
    if (e instanceof ToolError) throw e;
    if (isEngineFailure(e)) throw engineFailure(e, o.docker);
    throw new NetworkUnavailableError(describeError(e), { cause: e });
  }
}

async function ensureEgressNow(o: EnsureEgressOptions): Promise<Egress> {
  const names = egressNames(o.target);
  let known = seenReady.get(o.docker);
  if (!known) seenReady.set(o.docker, (known = new Map()));
  const seen = known.get(names.digest);
  if (seen) {
    const state = await withDeadline(o.docker.getContainer(names.proxy).inspect(), ENGINE_DEADLINE_MS, 'inspect proxy').then((i) => i.State, () => undefined);
    if (state?.Running && state.StartedAt === seen.startedAt) return seen.egress;
    known.delete(names.digest);
  }
  const image = await ensureProxyImage({ docker: o.docker, log: o.log, logHint: o.logHint, ...(o.signal ? { signal: o.signal } : {}) });
  const subnet = await ensureNetwork(o.docker, names.network, egressLabels(o.version, 'network', names.digest), o.log);
  const proxyAddress = hostAddress(subnet, 2);
  const egress = { digest: names.digest, network: names.network, proxyName: names.proxy, proxyAddress };
  await ensureProxy(o, egress, image, subnet);
  const startedAt = await withDeadline(o.docker.getContainer(names.proxy).inspect(), ENGINE_DEADLINE_MS, 'inspect proxy').then((i) => i.State.StartedAt, () => undefined);
  if (!startedAt) return egress;
  const started = { ...egress, startedAt };
  known.set(names.digest, { egress: started, startedAt });
  return started;
}

/** `subnet`'s n-th address ("172.18.0.0/16", 2 → "172.18.0.2"). */
export function hostAddress(subnet: string, n: number): string {
  const [base] = subnet.split('/');
  const parts = base.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p))) throw new Error(`not an IPv4 subnet: ${subnet}`);
  const value = ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) + n;
  return [24, 16, 8, 0].map((s) => (value >>> s) & 255).join('.');
}

function subnetOf(info: { IPAM?: { Config?: { Subnet?: string }[] | null } }): string | undefined {
  return info.IPAM?.Config?.find((c) => c.Subnet && !c.Subnet.includes(':'))?.Subnet;
}

/**
 * The internal network, with a subnet of its own: the engine picks a free one for a probe network
 * (it knows what the host's routes and other networks use), and the real one is made with that
 * subnet said explicitly, which is what lets the proxy keep a fixed address on it.
 */

async function ensureNetwork(docker: Dockerode, name: string, labels: Record<string, string>, log: Logger): Promise<string> {
  for (let attempt = 0; attempt < 4; attempt++) {
    const found = await inspectNetwork(docker, name);
    if (found) {
      const subnet = subnetOf(found);
      if (subnet) return subnet;
      throw new NetworkUnavailableError(`the network ${name} has no IPv4 subnet`);
    }
    // Docker gives the host an address on a bridge network, internal or not; without one, a
    // sandbox cannot reach the host's own services through it.
    const options: Record<string, string> = { 'com.docker.network.bridge.inhibit_ipv4': 'true' };
    const probeName = `${name}-probe-${process.pid}`;
    // Labelled as a probe: releaseIdleEgress never takes it for the network (and its proxy).
    const probeLabels = { ...labels, [NETWORK_LABEL.role]: 'probe' };
    const probe = await withDeadline(docker.createNetwork({ Name: probeName, Driver: 'bridge', Internal: true, Labels: probeLabels, Options: options }), ENGINE_DEADLINE_MS, 'create network');
    let subnet: string | undefined;
    try {
      subnet = subnetOf(await probe.inspect());
    } finally {
      await probe.remove().catch((e: unknown) => log.warn(`could not remove the probe network ${probeName}: ${describeError(e)}`));
    }
    if (!subnet) throw new NetworkUnavailableError('the engine gave the sandbox network no IPv4 subnet');
    try {
      await withDeadline(
        docker.createNetwork({ Name: name, Driver: 'bridge', Internal: true, CheckDuplicate: true, Labels: labels, Options: options, IPAM: { Driver: 'default', Config: [{ Subnet: subnet }] } }),
        ENGINE_DEADLINE_MS,
        'create network',
      );
      log.info(`network ${name} created (internal, ${subnet})`);
      return subnet;
    } catch (e) {
      // Another process made it (409), or took the subnet meanwhile: look again.
      log.info(`network ${name}: ${describeError(e)}; trying again`);
    }
  }
  throw new NetworkUnavailableError(`the engine did not create the network ${name}`);
}

async function inspectNetwork(docker: Dockerode, name: string): Promise<Dockerode.NetworkInspectInfo | undefined> {
  try {
    return (await withDeadline(docker.getNetwork(name).inspect(), ENGINE_DEADLINE_MS, 'inspect network')) as Dockerode.NetworkInspectInfo;
  } catch (e) {
    if (statusCode(e) === 404) return undefined;
    throw e;
  }
}

async function ensureProxy(o: EnsureEgressOptions, egress: Egress, image: string, subnet: string): Promise<void> {
  const { docker, log } = o;
  const container = docker.getContainer(egress.proxyName);
  for (let attempt = 0; attempt < 3; attempt++) {
    let info: Dockerode.ContainerInspectInfo | undefined;
    try {
      info = await withDeadline(container.inspect(), ENGINE_DEADLINE_MS, 'inspect proxy');
    } catch (e) {
      if (statusCode(e) !== 404) throw e;
    }
    if (info?.State.Running) return waitReady(docker, container, egress.proxyName);
    if (info) {
      // Stopped (killed, the engine restarted): made again, so it starts from its image's state.
      log.warn(`network proxy ${egress.proxyName} was not running (${info.State.Status}); starting a new one`);
      await container.remove({ force: true }).catch(() => {});
    }
    try {
      const options = proxyContainerOptions({
        name: egress.proxyName,
        image,
        target: o.target,
        labels: egressLabels(o.version, 'proxy', egress.digest),
        engine: o.engine,
        sandboxSubnet: subnet,
        internal: { network: egress.network, address: egress.proxyAddress },
      });
      await withDeadline(docker.createContainer(options), ENGINE_DEADLINE_MS, 'create proxy');
    } catch (e) {
      const s = statusCode(e);
      if (s === 409 || (s === 500 && /already in use/i.test(describeError(e)))) continue; // another process made it
      throw e;
    }
    const testing = o.target.testing;
    await withDeadline(
      docker.getNetwork(testing?.egressNetwork ?? 'bridge').connect({ Container: egress.proxyName }),
      ENGINE_DEADLINE_MS,
      'connect proxy',
    );
    await withDeadline(container.start(), ENGINE_DEADLINE_MS, 'start proxy');
    await waitReady(docker, container, egress.proxyName);
    log.info(`network proxy ${egress.proxyName} started at ${egress.proxyAddress}:${PROXY_PORT} for ${o.target.policy.allow.join(', ')}${o.target.policy.deny.length ? ` (not ${o.target.policy.deny.join(', ')})` : ''}`);
    return;
  }
  throw new NetworkUnavailableError(`the proxy ${egress.proxyName} could not be made`);
}

/**
 * Removes the network and its proxy once no sandbox is on it (after a sandbox is removed). A
 * sandbox another process is making on it at that moment fails to start and makes them again.
 */
export async function releaseEgress(docker: Dockerode, network: string, log: Logger): Promise<void> {
  const info = await inspectNetwork(docker, network).catch(() => undefined);
  if (!info) return;
  const digest = info.Labels?.[NETWORK_LABEL.digest];
  if (!digest || network !== `codeact-net-${digest}`) return;
  const members = Object.values((info as { Containers?: Record<string, { Name?: string }> }).Containers ?? {}).map((c) => c.Name ?? '');
  if (members.some((n) => n !== `codeact-proxy-${digest}`)) return;
  // A stopped sandbox (after an engine restart) is on no network's list, but starts on this one again.
  const stopped = await docker.listContainers({ all: true, filters: { label: [`${LABEL.network}=${digest}`] } });
  if (stopped.length > 0) return;
  await removeEgress(docker, network, `codeact-proxy-${digest}`, log);
}

async function removeEgress(docker: Dockerode, network: string, proxy: string, log: Logger): Promise<void> {
  await docker
    .getContainer(proxy)
    .remove({ force: true })
    .then(() => log.info(`network proxy ${proxy} removed`))
    .catch((e: unknown) => {
      if (statusCode(e) !== 404) log.warn(`could not remove the network proxy ${proxy}: ${describeError(e)}`);
    });
  await docker
    .getNetwork(network)
    .remove()
    .catch((e: unknown) => {
      // 403/409: a sandbox joined it meanwhile; it stays for that one.
      if (statusCode(e) !== 404) log.info(`network ${network} kept: ${describeError(e)}`);
    });
}

/**
 * Every network of ours (and its proxy) that no sandbox is on any more, and every sandbox proxy
 * whose sandbox is gone (Podman): after a cleanup removed sandboxes without their objects (a
 * crashed window's, a CLI session's). Returns how many went.
 */
export async function releaseIdleEgress(docker: Dockerode, log: Logger): Promise<number> {
  const networks = await docker.listNetworks({ filters: { label: [`${NETWORK_LABEL.role}=network`] } });
  let removed = 0;
  for (const n of networks) {
    if (n.Labels?.[LABEL.managed] === undefined || n.Labels?.[NETWORK_LABEL.role] !== 'network') continue;
    await releaseEgress(docker, n.Name, log);
    if (!(await inspectNetwork(docker, n.Name).catch(() => undefined))) removed++;
  }
  return removed + (await releaseIdleSidecars(docker, log));
}
