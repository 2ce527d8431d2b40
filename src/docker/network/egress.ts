/**
 * A sandbox's way out, when its settings allow any: an internal network (no gateway, no route to
 * the host) whose only other member is the proxy, itself also on the engine's default network.
 * One network and one proxy per engine and policy, named by the policy's digest, so every window
 * and process with the same lists shares them, and they are found again after a reload. The
 * proxy keeps one address for the network's life (a subnet the engine chose, then pinned), so a
 * proxy brought back after it died is where the sandboxes' proxy variables say.
 */
import { Writable } from 'node:stream';
import type Dockerode from 'dockerode';
import { ToolError, describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { LABEL, LABEL_SCHEMA, networkDigest, type SandboxNetwork } from '../container';
import { ENGINE_DEADLINE_MS, engineFailure, isEngineFailure, statusCode, withDeadline, type EngineKind } from '../engine';
import { PROXY_CONF_ENV, PROXY_RUN_DIR, ensureProxyImage } from '../images';
import { NetworkUnavailableError } from './errors';
import { LOG_TAG, PROXY_PORT, squidConfig } from './squidConfig';

/** Labels of our networks and proxies, beside LABEL.managed. */
export const NETWORK_LABEL = {
  /** "network", "proxy", or "probe" (a network made only to learn a free subnet). */
  role: 'dev.codeact-sandbox.egress-role',
  /** The policy's digest: the network and proxy of one policy carry the same. */
  digest: 'dev.codeact-sandbox.egress',
} as const;

/** A sandbox network's policy and, for tests, where its "internet" is. */
export type EgressTarget = SandboxNetwork;

export interface Egress {
  digest: string;
  /** The internal network the sandbox joins. */
  network: string;
  proxyName: string;
  /** The proxy's address on the internal network. */
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
  const subnet = await ensureNetwork(o.docker, names.network, egressLabels(o, 'network', names.digest), o.engine, o.log);
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
function egressLabels(o: Pick<EnsureEgressOptions, 'version'>, role: 'network' | 'proxy', digest: string): Record<string, string> {
  return { [LABEL.managed]: LABEL_SCHEMA, [NETWORK_LABEL.role]: role, [NETWORK_LABEL.digest]: digest, ...(o.version ? { [LABEL.version]: o.version } : {}) };
}

async function ensureNetwork(docker: Dockerode, name: string, labels: Record<string, string>, engine: EngineKind, log: Logger): Promise<string> {
  for (let attempt = 0; attempt < 4; attempt++) {
    const found = await inspectNetwork(docker, name);
    if (found) {
      const subnet = subnetOf(found);
      if (subnet) return subnet;
      throw new NetworkUnavailableError(`the network ${name} has no IPv4 subnet`);
    }
    // Docker gives the host an address on a bridge network, internal or not; without one, a
    // sandbox cannot reach the host's own services through it. Podman's internal networks have none.
    const options: Record<string, string> = engine === 'docker' ? { 'com.docker.network.bridge.inhibit_ipv4': 'true' } : {};
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

/** How long a proxy may take to start listening (it makes a key, reads its configuration). */
const PROXY_READY_MS = 60_000;

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
      await withDeadline(docker.createContainer(proxyOptions(o, egress, image, subnet)), ENGINE_DEADLINE_MS, 'create proxy');
    } catch (e) {
      const s = statusCode(e);
      if (s === 409 || (s === 500 && /already in use/i.test(describeError(e)))) continue; // another process made it
      throw e;
    }
    const testing = o.target.testing;
    await withDeadline(
      docker.getNetwork(testing?.egressNetwork ?? defaultNetwork(o.engine)).connect({ Container: egress.proxyName }),
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

function defaultNetwork(engine: EngineKind): string {
  return engine === 'podman' ? 'podman' : 'bridge';
}

/** An IPv4 address with its prefix length: what a test may name as reachable, and nothing else. */
const IPV4_CIDR = /^(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\/(?:3[0-2]|[12]?\d)$/;

function proxyOptions(o: EnsureEgressOptions, egress: Egress, image: string, subnet: string): Dockerode.ContainerCreateOptions {
  const testing = o.target.testing;
  const bad = testing?.reachable.find((r) => !IPV4_CIDR.test(r));
  if (bad !== undefined) throw new NetworkUnavailableError(`the test setting reachable names ${JSON.stringify(bad)}, not an IPv4 range`);
  const config = squidConfig({ policy: o.target.policy, sandboxSubnet: subnet, ...(testing ? { reachable: testing.reachable } : {}) });
  // Writable by squid alone: it runs as Debian's proxy user (13).
  const tmpfs = 'rw,nosuid,nodev,noexec,size=16m,mode=0700,uid=13,gid=13';
  return {
    name: egress.proxyName,
    Image: image,
    Env: [`${PROXY_CONF_ENV}=${config}`],
    Labels: egressLabels(o, 'proxy', egress.digest),
    HostConfig: {
      NetworkMode: egress.network,
      ReadonlyRootfs: true,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Memory: 256 * 1024 * 1024,
      MemorySwap: 256 * 1024 * 1024,
      PidsLimit: 64,
      Tmpfs: { [PROXY_RUN_DIR]: tmpfs, '/tmp': tmpfs, '/var/spool/squid': tmpfs, '/var/log/squid': tmpfs },
      RestartPolicy: { Name: 'no' },
      ...(testing ? { ExtraHosts: Object.entries(testing.hosts).map(([name, ip]) => `${name}:${ip}`) } : {}),
      // The access log is how a run's connections are known: kept, and bounded.
      ...(o.engine === 'docker' ? { LogConfig: { Type: 'json-file', Config: { 'max-size': '8m', 'max-file': '2' } } } : {}),
    },
    NetworkingConfig: { EndpointsConfig: { [egress.network]: { IPAMConfig: { IPv4Address: egress.proxyAddress } } } },
  };
}

/**
 * Resolves once squid says it accepts connections, or its log shows it served one (a long-lived
 * proxy's start may have been rotated out of its log); rejects with its last lines when it stops first.
 */
async function waitReady(docker: Dockerode, container: Dockerode.Container, name: string): Promise<void> {
  const stream = (await withDeadline(container.logs({ follow: true, stdout: true, stderr: true }), ENGINE_DEADLINE_MS, 'read proxy log')) as NodeJS.ReadableStream & { destroy(): void };
  const lines: string[] = [];
  try {
    await withDeadline(
      new Promise<void>((resolve, reject) => {
        let text = '';
        const sink = new Writable({
          write(chunk: Buffer, _e: unknown, done: () => void) {
            text += chunk.toString('utf8');
            let i: number;
            while ((i = text.indexOf('\n')) >= 0) {
              const line = text.slice(0, i);
              text = text.slice(i + 1);
              lines.push(line);
              if (lines.length > 20) lines.shift();
              if (/Accepting .*connections at/.test(line) || line.startsWith(`${LOG_TAG} `)) resolve();
            }
            done();
          },
        });
        docker.modem.demuxStream(stream, sink, sink);
        stream.on('end', () => reject(new NetworkUnavailableError(`the proxy ${name} stopped as it started: ${lines.slice(-3).join(' | ') || 'no output'}`)));
        stream.on('error', reject);
      }),
      PROXY_READY_MS,
      'wait for the proxy to listen',
    );
  } finally {
    stream.destroy();
  }
}

/** Whether the policy's proxy runs (a call whose proxy died says so). */
export async function proxyRunning(docker: Dockerode, egress: Pick<Egress, 'proxyName'>): Promise<boolean> {
  try {
    return (await withDeadline(docker.getContainer(egress.proxyName).inspect(), ENGINE_DEADLINE_MS, 'inspect proxy')).State.Running === true;
  } catch {
    return false;
  }
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
 * Every network of ours (and its proxy) that no sandbox is on any more: after a cleanup removed
 * sandboxes without their objects (a crashed window's, a CLI session's). Returns how many went.
 */
export async function releaseIdleEgress(docker: Dockerode, log: Logger): Promise<number> {
  const networks = await docker.listNetworks({ filters: { label: [`${NETWORK_LABEL.role}=network`] } });
  let removed = 0;
  for (const n of networks) {
    if (n.Labels?.[LABEL.managed] === undefined || n.Labels?.[NETWORK_LABEL.role] !== 'network') continue;
    await releaseEgress(docker, n.Name, log);
    if (!(await inspectNetwork(docker, n.Name).catch(() => undefined))) removed++;
  }
  return removed;
}
