/**
 * The probe network: made only to learn a subnet the engine considers free (it knows what the
 * host's routes and other networks use), inspected and removed at once. Each holds one of the
 * engine's address pools while it exists, so one that outlived its maker (a crash between the
 * create and the remove, or a create the engine carried out after our deadline gave up on it) is
 * swept by cleanup: by its owner's liveness, as other leftovers are, and by its age.
 */
import * as os from 'node:os';
import type Dockerode from 'dockerode';
import { describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { LABEL } from '../container';
import { ENGINE_DEADLINE_MS, readEngine, statusCode, withDeadline } from '../engine';
import { NetworkUnavailableError } from './errors';
import { NETWORK_LABEL } from './proxyContainer';

/**
 * A probe older than this is nobody's: its maker inspects and removes it right after the create,
 * each within the engine's deadline, and a create the engine answered later than that was given
 * up on. Measured by the engine's own clock against the engine's creation time.
 */
export const PROBE_MAX_AGE_MS = 3 * ENGINE_DEADLINE_MS;

/** The process that makes a probe: a probe whose owner on this machine is gone is a leftover. */
export interface ProbeOwner {
  host: string;
  pid: number;
}

/** A probe's labels: the sandbox network's, as a probe (releaseIdleEgress never takes it for one), and its maker. */
export function probeLabels(networkLabels: Record<string, string>, owner: ProbeOwner = { host: os.hostname(), pid: process.pid }): Record<string, string> {
  return { ...networkLabels, [NETWORK_LABEL.role]: 'probe', [LABEL.ownerHost]: owner.host, [LABEL.ownerPid]: String(owner.pid) };
}

export function subnetOf(info: { IPAM?: { Config?: { Subnet?: string }[] | null } }): string | undefined {
  return info.IPAM?.Config?.find((c) => c.Subnet && !c.Subnet.includes(':'))?.Subnet;
}

/** A subnet the engine picks for a network with `options`, learned from a probe network named `name`. */
export async function probeSubnet(docker: Dockerode, name: string, labels: Record<string, string>, options: Record<string, string>, log: Logger): Promise<string | undefined> {
  const probe = await withDeadline(docker.createNetwork({ Name: name, Driver: 'bridge', Internal: true, Labels: probeLabels(labels), Options: options }), ENGINE_DEADLINE_MS, 'create network').catch(
    (e: unknown) => {
      throw noSubnetLeft(e) ?? e;
    },
  );
  try {
    return subnetOf(await probe.inspect());
  } finally {
    await probe.remove().catch((e: unknown) => log.warn(`could not remove the probe network ${name}: ${describeError(e)}`));
  }
}

/** The engine's address pools are used up: each sandbox with a network takes one range. */
function noSubnetLeft(e: unknown): NetworkUnavailableError | undefined {
  if (!/available, non-overlapping|no available network|address pools? .*exhausted/i.test(describeError(e))) return undefined;
  return new NetworkUnavailableError(
    "the engine has no free address range for another sandbox network (each sandbox with a network allow-list has one of its own); close chats that use the network, or give the engine more ranges (Docker's default-address-pools)",
    { cause: e },
  );
}

/**
 * Whether a probe network is a leftover: older than PROBE_MAX_AGE_MS (`now` and `created` by the
 * engine's clock), or made by a process of this machine (`host`) that `alive` says is gone. A
 * probe of another machine sharing the engine goes by its age alone.
 */
export function probeLeftOver(labels: Record<string, string> | undefined, created: string | undefined, now: number, host: string, alive: (pid: number) => boolean): boolean {
  const at = created === undefined ? NaN : Date.parse(created);
  if (Number.isFinite(at) && now - at > PROBE_MAX_AGE_MS) return true;
  const pid = Number(labels?.[LABEL.ownerPid]);
  return labels?.[LABEL.ownerHost] === host && Number.isInteger(pid) && pid > 0 && !alive(pid);
}

/** Removes our probe networks that are leftovers (probeLeftOver); returns how many went. */
export async function removeLeftoverProbes(docker: Dockerode, log: Logger, alive: (pid: number) => boolean): Promise<number> {
  const probes = await readEngine(() => docker.listNetworks({ filters: { label: [LABEL.managed, `${NETWORK_LABEL.role}=probe`] } }), 'list networks');
  if (probes.length === 0) return 0;
  const info = (await readEngine(() => docker.info() as Promise<{ SystemTime?: string }>, 'engine info').catch(() => undefined)) ?? {};
  const engineNow = info.SystemTime ? Date.parse(info.SystemTime) : NaN;
  const now = Number.isFinite(engineNow) ? engineNow : Date.now();
  let removed = 0;
  for (const p of probes) {
    if (p.Labels?.[LABEL.managed] === undefined || p.Labels?.[NETWORK_LABEL.role] !== 'probe') continue;
    if (!probeLeftOver(p.Labels, p.Created, now, os.hostname(), alive)) continue;
    try {
      await withDeadline(docker.getNetwork(p.Id).remove(), ENGINE_DEADLINE_MS, 'remove network');
      log.info(`probe network ${p.Name} removed (left by ${p.Labels[LABEL.ownerPid] ? `process ${p.Labels[LABEL.ownerPid]}` : 'an earlier version'})`);
      removed++;
    } catch (e) {
      if (statusCode(e) !== 404) log.warn(`could not remove the probe network ${p.Name}: ${describeError(e)}`);
    }
  }
  return removed;
}
