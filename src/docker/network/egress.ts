/**
 * A sandbox's way out, when its settings allow any (Docker): an internal network of the sandbox's
 * own (no gateway, no route to the host), whose only other member is its policy's proxy. The
 * proxy is shared by every window and process with the same lists (named by the policy's digest,
 * found again after a reload) and joins each of its sandboxes' networks as they are made; a
 * sandbox has no peer but the proxy, so no program reaches another sandbox's servers, by address
 * or by the engine's DNS. On each sandbox network the proxy keeps one address for the network's
 * life (a subnet the engine chose, then pinned), so a proxy brought back after it died is where
 * the sandbox's proxy variables say. Podman's way out is sidecar.ts.
 */
import { randomBytes } from 'node:crypto';
import type Dockerode from 'dockerode';
import { ToolError, describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { LABEL, networkDigest, type SandboxNetwork } from '../container';
import { ENGINE_DEADLINE_MS, SandboxGoneError, engineFailure, isEngineFailure, statusCode, withDeadline, type EngineKind } from '../engine';
import { ensureProxyImage } from '../images';
import { NetworkUnavailableError } from './errors';
import { NETWORK_LABEL, egressLabels, proxyContainerOptions, waitReady } from './proxyContainer';
import { releaseIdleSidecars } from './sidecar';
import { PROXY_PORT } from './squidConfig';
import { probeSubnet, subnetOf } from './probe';

/** A sandbox network's policy and, for tests, where its "internet" is. */
export type EgressTarget = SandboxNetwork;

export interface Egress {
  digest: string;
  /** What the sandbox's NetworkMode names: its own internal network (Docker), or `container:<proxy>` (Podman). */
  network: string;
  proxyName: string;
  /** The proxy's address as the sandbox reaches it: on the sandbox's network, or loopback. */
  proxyAddress: string;
  /** When the running proxy started (the engine's word): another value is another proxy, with a log of its own. */
  startedAt?: string;
  /** A proxy with credentials: the certificate of the CA made for this sandbox alone, which its programs trust. */
  ca?: string;
}

export function egressNames(target: EgressTarget): { digest: string; proxy: string } {
  const digest = networkDigest(target);
  return { digest, proxy: `codeact-proxy-${digest}` };
}

/**
 * A new internal network for the sandbox made as `sandboxName` (the sandbox's label keeps it when
 * a spare is renamed). A random part of its own: a later sandbox that happens to be given a name
 * an earlier one had (a renamed spare's) must never find that one's network and join it.
 */
export function sandboxNetworkName(sandboxName: string): string {
  return `${sandboxName}-${randomBytes(4).toString('hex')}-net`;
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
  /** The sandbox's own internal network (sandboxNetworkName). */
  network: string;
  /**
   * Made when missing (a sandbox being made). Otherwise a missing network is a sandbox that lost
   * its way out: SandboxGoneError, and the caller replaces it.
   */
  make?: boolean;
  log: Logger;
  signal?: AbortSignal;
  /** Where the user finds the proxy build's log. */
  logHint: string;
  /** The version of whoever makes the network and proxy, labelled on them as on its sandboxes. */
  version?: string;
}

/** The sandbox's network with the policy's proxy running on it: found, started again, or made. */
export async function ensureEgress(o: EnsureEgressOptions): Promise<Egress> {
  try {
    return await ensureEgressNow(o);
  } catch (e) {
    if (e instanceof ToolError || e instanceof SandboxGoneError) throw e;
    if (isEngineFailure(e)) throw engineFailure(e, o.docker);
    throw new NetworkUnavailableError(describeError(e), { cause: e });
  }
}

async function ensureEgressNow(o: EnsureEgressOptions): Promise<Egress> {
  const names = egressNames(o.target);
  const base = { digest: names.digest, network: o.network, proxyName: names.proxy };
  // A call's usual case, in one inspect: the proxy runs and is on the sandbox's network.
  const info = await inspectContainer(o.docker, names.proxy);
  const on = info?.State.Running ? info.NetworkSettings.Networks?.[o.network] : undefined;
  const address = on?.IPAMConfig?.IPv4Address || on?.IPAddress;
  if (info && address) return { ...base, proxyAddress: address, startedAt: info.State.StartedAt };
  const image = await ensureProxyImage({ docker: o.docker, log: o.log, logHint: o.logHint, ...(o.signal ? { signal: o.signal } : {}) });
  const subnet = await ensureNetwork(o, egressLabels(o.version, 'network', names.digest));
  const proxyAddress = hostAddress(subnet, 2);
  const startedAt = await ensureProxy(o, names.proxy, image);
  await joinProxy(o.docker, names.proxy, o.network, proxyAddress);
  return { ...base, proxyAddress, startedAt };
}

async function inspectContainer(docker: Dockerode, name: string): Promise<Dockerode.ContainerInspectInfo | undefined> {
  try {
    return await withDeadline(docker.getContainer(name).inspect(), ENGINE_DEADLINE_MS, 'inspect proxy');
  } catch (e) {
    if (statusCode(e) === 404) return undefined;
    throw e;
  }
}

/** `subnet`'s n-th address ("172.18.0.0/16", 2 → "172.18.0.2"). */
export function hostAddress(subnet: string, n: number): string {
  const [base] = subnet.split('/');
  const parts = base.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p))) throw new Error(`not an IPv4 subnet: ${subnet}`);
  const value = ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) + n;
  return [24, 16, 8, 0].map((s) => (value >>> s) & 255).join('.');
}

/**
 * The sandbox's internal network, with a subnet of its own: the engine picks a free one for a
 * probe network (it knows what the host's routes and other networks use), and the real one is
 * made with that subnet said explicitly, which is what lets the proxy keep a fixed address on it.
 */
async function ensureNetwork(o: EnsureEgressOptions, labels: Record<string, string>): Promise<string> {
  const { docker, network: name, log } = o;
  for (let attempt = 0; attempt < 4; attempt++) {
    const found = await inspectNetwork(docker, name);
    if (found) {
      const subnet = subnetOf(found);
      if (subnet) return subnet;
      throw new NetworkUnavailableError(`the network ${name} has no IPv4 subnet`);
    }
    if (!o.make) throw new SandboxGoneError(`its network ${name} is gone`);
    // Docker gives the host an address on a bridge network, internal or not; without one, a
    // sandbox cannot reach the host's own services through it.
    const options: Record<string, string> = { 'com.docker.network.bridge.inhibit_ipv4': 'true' };
    const subnet = await probeSubnet(docker, `${name}-probe-${process.pid}`, labels, options, log);
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
      // Another process took the subnet meanwhile: look again.
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

/** Every subnet of the network the proxy reaches the internet on: squid serves no source there. */
async function outsideSubnets(docker: Dockerode, network: string): Promise<string[]> {
  const info = await inspectNetwork(docker, network);
  if (!info) throw new NetworkUnavailableError(`the engine has no network ${network} for the proxy to reach the internet on`);
  return (info.IPAM?.Config ?? []).flatMap((c) => (c.Subnet ? [c.Subnet] : []));
}

/** The policy's proxy, running on its outside network: found, or made. Returns when it started. */
async function ensureProxy(o: EnsureEgressOptions, name: string, image: string): Promise<string | undefined> {
  const { docker, log } = o;
  const container = docker.getContainer(name);
  const outside = o.target.testing?.egressNetwork ?? 'bridge';
  for (let attempt = 0; attempt < 3; attempt++) {
    const info = await inspectContainer(docker, name);
    if (info?.State.Running) {
      await waitReady(docker, container, name);
      return info.State.StartedAt;
    }
    if (info) {
      // Stopped (killed, the engine restarted): made again, so it starts from its image's state.
      log.warn(`network proxy ${name} was not running (${info.State.Status}); starting a new one`);
      await container.remove({ force: true }).catch(() => {});
    }
    try {
      const options = proxyContainerOptions({
        name,
        image,
        target: o.target,
        labels: egressLabels(o.version, 'proxy', networkDigest(o.target)),
        engine: o.engine,
        clients: { except: await outsideSubnets(docker, outside) },
        outside: { network: outside },
      });
      await withDeadline(docker.createContainer(options), ENGINE_DEADLINE_MS, 'create proxy');
    } catch (e) {
      const s = statusCode(e);
      if (s === 409 || (s === 500 && /already in use/i.test(describeError(e)))) continue; // another process made it
      throw e;
    }
    await withDeadline(container.start(), ENGINE_DEADLINE_MS, 'start proxy');
    await waitReady(docker, container, name);
    log.info(`network proxy ${name} started for ${o.target.policy.allow.join(', ')}${o.target.policy.deny.length ? ` (not ${o.target.policy.deny.join(', ')})` : ''}`);
    return (await inspectContainer(docker, name))?.State.StartedAt;
  }
  throw new NetworkUnavailableError(`the proxy ${name} could not be made`);
}

/** The proxy joins a sandbox's network at its fixed address (another process may have done it a moment ago). */
async function joinProxy(docker: Dockerode, proxy: string, network: string, address: string): Promise<void> {
  try {
    await withDeadline(docker.getNetwork(network).connect({ Container: proxy, EndpointConfig: { IPAMConfig: { IPv4Address: address } } }), ENGINE_DEADLINE_MS, 'connect proxy');
  } catch (e) {
    const on = (await inspectContainer(docker, proxy))?.NetworkSettings.Networks?.[network];
    if (on?.IPAMConfig?.IPv4Address === address || on?.IPAddress === address) return;
    throw e;
  }
}

/**
 * After a sandbox is removed: its network goes, and the policy's proxy with the policy's last
 * network. A sandbox another process is making for the policy at that moment fails to start and
 * makes them again (make.ts).
 */
export async function releaseEgress(docker: Dockerode, digest: string, network: string, log: Logger): Promise<void> {
  await removeNetwork(docker, `codeact-proxy-${digest}`, network, log);
  await releaseProxyIfIdle(docker, digest, log);
}

async function removeNetwork(docker: Dockerode, proxy: string, network: string, log: Logger): Promise<boolean> {
  const net = docker.getNetwork(network);
  await withDeadline(net.disconnect({ Container: proxy, Force: true }), ENGINE_DEADLINE_MS, 'disconnect proxy').catch(() => {});
  try {
    await withDeadline(net.remove(), ENGINE_DEADLINE_MS, 'remove network');
    log.info(`network ${network} removed`);
    return true;
  } catch (e) {
    // 403/409: a sandbox is still on it; it stays for that one.
    if (statusCode(e) === 404) return false;
    log.info(`network ${network} kept: ${describeError(e)}`);
    return false;
  }
}

/** Removes a policy's proxy once it has no sandbox network and no sandbox (a stopped one starts again on its network). */
async function releaseProxyIfIdle(docker: Dockerode, digest: string, log: Logger): Promise<void> {
  const networks = await docker.listNetworks({ filters: { label: [`${NETWORK_LABEL.digest}=${digest}`, `${NETWORK_LABEL.role}=network`] } });
  if (networks.length > 0) return;
  const sandboxes = await docker.listContainers({ all: true, filters: { label: [`${LABEL.network}=${digest}`] } });
  if (sandboxes.length > 0) return;
  const proxy = `codeact-proxy-${digest}`;
  await docker
    .getContainer(proxy)
    .remove({ force: true })
    .then(() => log.info(`network proxy ${proxy} removed`))
    .catch((e: unknown) => {
      if (statusCode(e) !== 404) log.warn(`could not remove the network proxy ${proxy}: ${describeError(e)}`);
    });
}

/**
 * Every sandbox network of ours whose sandbox is gone, every policy proxy left with no network,
 * and every sandbox proxy whose sandbox is gone (Podman): after a cleanup removed sandboxes
 * without their objects (a crashed window's, a CLI session's). Returns how many networks and
 * sandbox proxies went.
 */
export async function releaseIdleEgress(docker: Dockerode, log: Logger): Promise<number> {
  const networks = await docker.listNetworks({ filters: { label: [`${NETWORK_LABEL.role}=network`] } });
  let removed = 0;
  const digests = new Set<string>();
  for (const n of networks) {
    const digest = n.Labels?.[NETWORK_LABEL.digest];
    if (n.Labels?.[LABEL.managed] === undefined || n.Labels?.[NETWORK_LABEL.role] !== 'network' || !digest) continue;
    digests.add(digest);
    const users = await docker.listContainers({ all: true, filters: { label: [`${LABEL.egressNetwork}=${n.Name}`] } });
    if (users.length > 0) continue;
    // A network an earlier version shared between a policy's sandboxes: kept while one is on it.
    const members = Object.values((await inspectNetwork(docker, n.Name).catch(() => undefined))?.Containers ?? {}).map((c) => c.Name ?? '');
    if (members.some((m) => m !== `codeact-proxy-${digest}`)) continue;
    if (await removeNetwork(docker, `codeact-proxy-${digest}`, n.Name, log)) removed++;
  }
  const proxies = await docker.listContainers({ all: true, filters: { label: [`${NETWORK_LABEL.role}=proxy`] } });
  for (const p of proxies) {
    const digest = p.Labels?.[NETWORK_LABEL.digest];
    if (p.Labels?.[LABEL.managed] !== undefined && digest) digests.add(digest);
  }
  for (const digest of digests) await releaseProxyIfIdle(docker, digest, log);
  return removed + (await releaseIdleSidecars(docker, log));
}
