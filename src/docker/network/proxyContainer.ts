/**
 * The proxy's container, as data, and the waits on it that both ways out share: the policy's
 * shared proxy on Docker (egress.ts) and a sandbox's own proxy on Podman (sidecar.ts).
 */
import { followProxyLog } from './proxyLog';
import type Dockerode from 'dockerode';
import { LABEL, LABEL_SCHEMA, PODMAN_RLIMITS, type SandboxNetwork } from '../container';
import { ENGINE_DEADLINE_MS, withDeadline, type EngineKind } from '../engine';
import { CREDENTIALS_PORT, CREDENTIALS_RUN_DIR, CREDENTIALS_UID, PROXY_CONF_ENV, PROXY_CREDENTIALS_ENV, PROXY_GATE_COMMAND, PROXY_HOSTS_ENV, PROXY_NEVER_ENV, PROXY_REACH_ENV, PROXY_RUN_DIR, PROXY_SHARED_ENV } from '../images';
import { squidCredentials } from './credentialProxy';
import { NetworkUnavailableError } from './errors';
import { LOG_TAG, NEVER_REACHED, squidConfig, type ProxyConfigInput } from './squidConfig';

/** Labels of our networks and proxies, beside LABEL.managed. */
export const NETWORK_LABEL = {
  /**
   * "network", "proxy" (a policy's shared proxy, Docker), "sidecar" (one sandbox's proxy,
   * Podman), or "probe" (a network made only to learn a free subnet).
   */
  role: 'dev.codeact-sandbox.egress-role',
  /** The policy's digest: the network and proxies of one policy carry the same. */
  digest: 'dev.codeact-sandbox.egress',
} as const;

export type EgressRole = 'network' | 'proxy' | 'sidecar' | 'probe';

export function egressLabels(version: string | undefined, role: EgressRole, digest: string): Record<string, string> {
  return { [LABEL.managed]: LABEL_SCHEMA, [NETWORK_LABEL.role]: role, [NETWORK_LABEL.digest]: digest, ...(version ? { [LABEL.version]: version } : {}) };
}

/** An IPv4 address with its prefix length: what a test may name as reachable, and nothing else. */
const IPV4_CIDR = /^(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\/(?:3[0-2]|[12]?\d)$/;

export interface ProxyContainerInput {
  name: string;
  image: string;
  target: SandboxNetwork;
  labels: Record<string, string>;
  engine: EngineKind;
  /** Whom squid serves (squidConfig's `clients`). */
  clients: ProxyConfigInput['clients'];
  /** Set: the sandbox shares the proxy's network namespace, and the gate sets its firewall first (Podman). */
  gate?: { network: string };
  /**
   * Docker: the network the proxy reaches the internet on (the engine's default one). It joins
   * each sandbox's internal network later, one by one, as they are made (egress.ts).
   */
  outside?: { network: string };
}

/** The proxy's container: squid alone, hardened like a sandbox, with only what its start needs. */
export function proxyContainerOptions(input: ProxyContainerInput): Dockerode.ContainerCreateOptions {
  const testing = input.target.testing;
  const bad = testing?.reachable.find((r) => !IPV4_CIDR.test(r));
  // squid reads an empty source list as a syntax error, and an outside it does not know of is served.
  if ('except' in input.clients && input.clients.except.length === 0) throw new NetworkUnavailableError("the proxy's outside network has no subnet to keep out");
  if (bad !== undefined) throw new NetworkUnavailableError(`the test setting reachable names ${JSON.stringify(bad)}, not an IPv4 range`);
  const credentials = input.target.credentials;
  // A proxy with credentials is one sandbox's (sidecar.ts): the CA it makes is that sandbox's alone.
  if (credentials && !input.gate) throw new NetworkUnavailableError('credentials need a proxy of the sandbox\'s own');
  const config = squidConfig({
    policy: input.target.policy,
    clients: input.clients,
    ...(input.gate ? { listen: '127.0.0.1' } : {}),
    ...(testing ? { reachable: testing.reachable, hostsFile: `${PROXY_RUN_DIR}/hosts` } : {}),
    ...(credentials ? { credentials: squidCredentials(credentials, CREDENTIALS_PORT) } : {}),
  });
  const hosts = testing ? Object.entries(testing.hosts).map(([name, ip]) => `${ip} ${name}`) : [];
  const podman = input.engine === 'podman';
  // Writable by squid alone: it runs as Debian's proxy user (13). Podman's tmpfs takes no owner;
  // there, nothing else runs in the container to write to it (a sandbox joins only the network).
  // The gate runs as root before it, and writes nothing there.
  const tmpfs = podman ? 'rw,nosuid,nodev,noexec,size=16m,mode=1777' : 'rw,nosuid,nodev,noexec,size=16m,mode=0700,uid=13,gid=13';
  // The forwarder's own: its leaf's key, readable by its user alone (on Podman it makes a 0700 folder inside).
  const forwarderTmpfs = podman ? 'rw,nosuid,nodev,noexec,size=1m,mode=1777' : `rw,nosuid,nodev,noexec,size=1m,mode=0700,uid=${CREDENTIALS_UID},gid=${CREDENTIALS_UID}`;
  return {
    name: input.name,
    Image: input.image,
    Env: [
      `${PROXY_CONF_ENV}=${config}`,
      ...(hosts.length ? [`${PROXY_HOSTS_ENV}=${hosts.join('\n')}`] : []),
      `${PROXY_NEVER_ENV}=${NEVER_REACHED.filter((r) => !r.includes(':')).join(' ')}`,
      ...(testing?.reachable.length ? [`${PROXY_REACH_ENV}=${testing.reachable.join(' ')}`] : []),
      ...(input.gate ? [`${PROXY_SHARED_ENV}=1`] : []),
      ...(credentials ? [`${PROXY_CREDENTIALS_ENV}=1`] : []),
    ],
    // The credentials come once on standard input (credentialProxy.ts), to the forwarder alone.
    ...(credentials ? { OpenStdin: true, StdinOnce: true, AttachStdin: true } : {}),
    Labels: input.labels,
    // The gate starts as root with what setting a firewall and then becoming the proxy user take;
    // it leaves squid none of it (proxyImage.ts).
    User: '0',
    Cmd: [PROXY_GATE_COMMAND],
    HostConfig: {
      NetworkMode: input.gate?.network ?? input.outside?.network ?? 'none',
      ReadonlyRootfs: true,
      CapDrop: ['ALL'],
      CapAdd: ['NET_ADMIN', 'SETUID', 'SETGID', 'SETPCAP'],
      SecurityOpt: ['no-new-privileges'],
      Memory: 256 * 1024 * 1024,
      MemorySwap: 256 * 1024 * 1024,
      PidsLimit: 64,
      Tmpfs: { [PROXY_RUN_DIR]: tmpfs, '/tmp': tmpfs, '/var/spool/squid': tmpfs, '/var/log/squid': tmpfs, ...(credentials ? { [CREDENTIALS_RUN_DIR]: forwarderTmpfs } : {}) },
      RestartPolicy: { Name: 'no' },
      // No IPv6 (a link-local address reaches the host's side of a bridge), and, in the namespace
      // a sandbox joins, no port under 1024 for anyone but a privileged process.
      Sysctls: {
        'net.ipv6.conf.all.disable_ipv6': '1',
        'net.ipv6.conf.default.disable_ipv6': '1',
        ...(input.gate ? { 'net.ipv4.ip_unprivileged_port_start': '1024' } : {}),
      },
      // No core file: a crash must not write the forwarder's memory anywhere.
      Ulimits: [{ Name: 'core', Soft: 0, Hard: 0 }, ...(podman ? PODMAN_RLIMITS : [])],
      // The access log is how a run's connections are known: kept, and bounded.
      LogConfig: podman ? { Type: 'k8s-file', Config: { 'max-size': '8m' } } : { Type: 'json-file', Config: { 'max-size': '8m', 'max-file': '2' } },
    },
  };
}

/** How long a proxy may take to start listening (it makes a key, reads its configuration). */
const PROXY_READY_MS = 60_000;

/**
 * Resolves once squid says it accepts connections, or its log shows it served one (a long-lived
 * proxy's start may have been rotated out of its log); rejects with its last lines when it stops first.
 */
export async function waitReady(docker: Dockerode, container: Dockerode.Container, name: string): Promise<void> {
  await followProxyLog(docker, container, {
    stdout: true,
    stderr: true,
    deadlineMs: PROXY_READY_MS,
    what: 'wait for the proxy to listen',
    onLine: (line) => (/Accepting .*connections at/.test(line) || line.startsWith(`${LOG_TAG} `) ? true : undefined),
    atEnd: (last) => new NetworkUnavailableError(`the proxy ${name} stopped as it started: ${last.slice(-3).join(' | ') || 'no output'}`),
  });
}

/** Whether a proxy runs (a call whose proxy died says so). */
export async function proxyRunning(docker: Dockerode, egress: { proxyName: string }): Promise<boolean> {
  try {
    return (await withDeadline(docker.getContainer(egress.proxyName).inspect(), ENGINE_DEADLINE_MS, 'inspect proxy')).State.Running === true;
  } catch {
    return false;
  }
}
