/**
 * Podman's way out, and on Docker a sandbox's with credentials (its CA must be its own): one proxy per sandbox, whose network namespace the sandbox joins
 * (`container:<proxy>`). Podman's internal networks cannot be Docker's (measured on 4.3: the host
 * holds an address on each, which a sandbox could reach, and where Docker runs beside it, Docker's
 * firewall drops the traffic between their members), so the proxy is on an ordinary network and
 * the namespace's own firewall, set by the proxy's gate before squid starts, lets only squid's
 * user send anywhere but loopback. The sandbox is made after the gate said so; a sandbox whose
 * proxy stopped has lost its way out (the namespace went with the proxy) and is replaced.
 */
import type Dockerode from 'dockerode';
import { ToolError, describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { LABEL, networkDigest, type SandboxNetwork } from '../container';
import { ENGINE_DEADLINE_MS, SandboxGoneError, engineFailure, isEngineFailure, isNameTaken, statusCode, withDeadline, type EngineKind } from '../engine';
import { ensureProxyImage } from '../images';
import type { Egress } from './egress';
import { NetworkUnavailableError } from './errors';
import { NETWORK_LABEL, egressLabels, proxyContainerOptions, waitReady } from './proxyContainer';
import { attachCredentials, forwarderCa } from './credentialProxy';

/** Where a sandbox reaches its own proxy: the loopback of the namespace they share. */
const LOOPBACK = '127.0.0.1';

export interface SidecarOptions {
  docker: Dockerode;
  /** Podman always; Docker for a sandbox with credentials (its CA is its own). */
  engine: EngineKind;
  target: SandboxNetwork;
  /** The sandbox's name when it is made: the proxy's is derived from it (and kept when a spare is renamed). */
  sandboxName: string;
  log: Logger;
  signal?: AbortSignal;
  logHint: string;
  version?: string;
}

export function sidecarName(sandboxName: string): string {
  return `${sandboxName}-proxy`;
}

function egressOf(target: SandboxNetwork, name: string, info: Dockerode.ContainerInspectInfo): Egress {
  return { digest: networkDigest(target), network: `container:${info.Id}`, proxyName: name, proxyAddress: LOOPBACK, startedAt: info.State.StartedAt };
}

/** A new sandbox's proxy, running behind its firewall: the sandbox joins it next. */
export async function makeSidecar(o: SidecarOptions): Promise<Egress> {
  const name = sidecarName(o.sandboxName);
  try {
    const image = await ensureProxyImage({ docker: o.docker, log: o.log, logHint: o.logHint, ...(o.signal ? { signal: o.signal } : {}) });
    const options = proxyContainerOptions({
      name,
      image,
      target: o.target,
      labels: egressLabels(o.version, 'sidecar', networkDigest(o.target)),
      engine: o.engine,
      clients: { only: `${LOOPBACK}/32` },
      gate: { network: o.target.testing?.egressNetwork ?? (o.engine === 'podman' ? 'podman' : 'bridge') },
    });
    const container = await withDeadline(o.docker.createContainer(options), ENGINE_DEADLINE_MS, 'create proxy');
    const credentials = o.target.credentials;
    let delivery: Awaited<ReturnType<typeof attachCredentials>> | undefined;
    try {
      if (credentials) delivery = await attachCredentials(container, { ...o.target, credentials });
      await withDeadline(container.start(), ENGINE_DEADLINE_MS, 'start proxy');
      if (delivery) await withDeadline(delivery.deliver(), ENGINE_DEADLINE_MS, 'hand the proxy its credentials');
      const ca = credentials ? forwarderCa(o.docker, container, name) : undefined;
      ca?.catch(() => {});
      await waitReady(o.docker, container, name);
      const caPem = await ca;
      const info = await withDeadline(container.inspect(), ENGINE_DEADLINE_MS, 'inspect proxy');
      if (!info.State.Running) throw new NetworkUnavailableError(`the proxy ${name} stopped as it started`);
      const bound = credentials ? `; credentials added for ${[...new Set(credentials.bindings.flatMap((b) => b.hosts))].join(', ')}` : '';
      o.log.info(`network proxy ${name} started for ${o.target.policy.allow.join(', ')}${o.target.policy.deny.length ? ` (not ${o.target.policy.deny.join(', ')})` : ''}${bound}`);
      return { ...egressOf(o.target, name, info), ...(caPem ? { ca: caPem } : {}) };
    } catch (e) {
      delivery?.abandon();
      await removeSidecar(o.docker, name, o.log);
      throw e;
    }
  } catch (e) {
    // Another process making the same shared sandbox took the name first: its sandbox is the one.
    if (e instanceof ToolError || isNameTaken(e)) throw e;
    if (isEngineFailure(e)) throw engineFailure(e, o.docker);
    throw new NetworkUnavailableError(describeError(e), { cause: e });
  }
}

/**
 * The sandbox's proxy before a call. A proxy that stopped took the namespace's way out with it: the
 * sandbox is gone as far as the network goes, and is replaced (the caller's SandboxGoneError path).
 */
export async function sidecarEgress(docker: Dockerode, target: SandboxNetwork, name: string | undefined): Promise<Egress> {
  if (name === undefined) throw new SandboxGoneError('the sandbox has no network proxy');
  let info: Dockerode.ContainerInspectInfo;
  try {
    info = await withDeadline(docker.getContainer(name).inspect(), ENGINE_DEADLINE_MS, 'inspect proxy');
  } catch (e) {
    if (statusCode(e) === 404) throw new SandboxGoneError(`its network proxy ${name} is gone`, { cause: e });
    if (isEngineFailure(e)) throw engineFailure(e, docker);
    throw e;
  }
  if (!info.State.Running) throw new SandboxGoneError(`its network proxy ${name} stopped (${info.State.Status})`);
  return egressOf(target, name, info);
}

/** Removes a sandbox's proxy (after the sandbox: Podman keeps a proxy a sandbox still joins). */
export async function removeSidecar(docker: Dockerode, name: string, log: Logger): Promise<void> {
  await docker
    .getContainer(name)
    .remove({ force: true })
    .then(() => log.info(`network proxy ${name} removed`))
    .catch((e: unknown) => {
      if (statusCode(e) !== 404) log.warn(`could not remove the network proxy ${name}: ${describeError(e)}`);
    });
}

/**
 * Every sandbox proxy whose sandbox is gone (removed by a cleanup, or never made after a crash).
 * A proxy another process made a moment ago for a sandbox it is about to create goes too; that
 * process makes it again (make.ts). Returns how many went.
 */
export async function releaseIdleSidecars(docker: Dockerode, log: Logger): Promise<number> {
  const proxies = await docker.listContainers({ all: true, filters: { label: [`${NETWORK_LABEL.role}=sidecar`] } });
  let removed = 0;
  for (const p of proxies) {
    if (p.Labels?.[LABEL.managed] === undefined || p.Labels?.[NETWORK_LABEL.role] !== 'sidecar') continue;
    const name = (p.Names?.[0] ?? '').replace(/^\//, '');
    if (!name) continue;
    const users = await docker.listContainers({ all: true, filters: { label: [`${LABEL.proxy}=${name}`] } });
    if (users.length > 0) continue;
    await removeSidecar(docker, name, log);
    removed++;
  }
  return removed;
}
