import * as fs from 'node:fs';
import type Dockerode from 'dockerode';
import type { Logger } from '../../core/logger';
import { statusCode } from '../engine';
import { describeError } from '../../core/errors';
import { LABEL, WORK_ROOT, hasAllLabels, removeQuietly, sharedSandboxName, type Owner } from '../container';
import { releaseIdleEgress, removeLeftoverProbes } from '../network';

/** The networks and proxies the removed sandboxes were the last users of go too. */
async function releaseNetworks(docker: Dockerode, log: Logger): Promise<void> {
  await releaseIdleEgress(docker, log).catch((e: unknown) => log.warn(`could not remove unused sandbox networks: ${describeError(e)}`));
}

/** Probe networks a crash or a create that outlived its deadline left: each holds one of the engine's address pools. */
async function removeProbes(docker: Dockerode, log: Logger): Promise<void> {
  await removeLeftoverProbes(docker, log, processIsAlive).catch((e: unknown) => log.warn(`could not remove leftover probe networks: ${describeError(e)}`));
}

/** Whether process `pid` of this machine still runs (the owner a label names). */
export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    // EPERM: it exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A zombie has ended; only its parent has not reaped it (where PID 1 reaps nothing, never).
  return !isZombie(pid);
}

function isZombie(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false; // no /proc (macOS, Windows): kill's answer stands
  }
}

/**
 * Removes sandboxes of `me.kind` left behind by processes of this machine that no longer run: VS
 * Code windows (a crash, a killed extension host) or MCP servers (a client that killed its server
 * before it could clean up). Sandboxes of live processes, of other machines sharing the engine,
 * and of CLI sessions (kept on purpose, until `cleanup`) are left alone.
 */
export async function removeOrphanedSandboxes(docker: Dockerode, me: Owner, log: Logger): Promise<number> {
  if (me.kind === 'cli') throw new Error('CLI sessions have no owning process; remove them with removeCliSandboxes');
  const label = [`${LABEL.managed}`, `${LABEL.ownerKind}=${me.kind}`, `${LABEL.ownerHost}=${me.host}`];
  const containers = await docker.listContainers({ all: true, filters: { label } });
  let removed = 0;
  for (const c of containers) {
    const pid = Number(c.Labels[LABEL.ownerPid]);
    if (!Number.isInteger(pid) || pid === me.pid || processIsAlive(pid)) continue;
    const volume = c.Mounts?.find((m) => m.Destination === WORK_ROOT)?.Name;
    log.info(`removing sandbox ${c.Names?.[0] ?? c.Id} left by a ${me.kind === 'vscode' ? 'window' : 'server'} that is gone (pid ${pid})`);
    await removeQuietly(docker, c.Id, volume, log, c.Labels[LABEL.proxy]);
    removed++;
  }
  // Volumes whose container never got created (a crash between the two calls).
  const { Volumes } = await docker.listVolumes({ filters: { label, dangling: ['true'] } });
  for (const v of (Volumes ?? []).filter((v) => hasAllLabels(v.Labels, label))) {
    const pid = Number(v.Labels?.[LABEL.ownerPid]);
    if (!Number.isInteger(pid) || pid === me.pid || processIsAlive(pid)) continue;
    await removeQuietly(docker, undefined, v.Name, log);
  }
  if (removed > 0) await releaseNetworks(docker, log);
  await removeProbes(docker, log);
  return removed;
}

/**
 * Removes CLI sandboxes: all of them (spares included), or the one of a session digest. A session
 * that took a spare carries the spare's labels: it is found by its name.
 */
export async function removeCliSandboxes(docker: Dockerode, log: Logger, sessionDigest?: string): Promise<number> {
  const label = [`${LABEL.managed}`, `${LABEL.ownerKind}=cli`, ...(sessionDigest ? [`${LABEL.session}=${sessionDigest}`] : [])];
  const containers: { Id: string; Mounts?: Dockerode.ContainerInfo['Mounts']; Labels?: Record<string, string> }[] = await docker.listContainers({ all: true, filters: { label } });
  if (sessionDigest) {
    const named = await docker
      .getContainer(sharedSandboxName('cli', sessionDigest))
      .inspect()
      .catch((e: unknown) => {
        if (statusCode(e) === 404) return undefined;
        throw e;
      });
    const ours = named?.Config.Labels?.[LABEL.managed] !== undefined && named.Config.Labels[LABEL.ownerKind] === 'cli';
    if (named && ours && !containers.some((c) => c.Id === named.Id)) containers.push({ Id: named.Id, Mounts: named.Mounts as Dockerode.ContainerInfo['Mounts'], Labels: named.Config.Labels });
  }
  for (const c of containers) {
    await removeQuietly(docker, c.Id, c.Mounts?.find((m) => m.Destination === WORK_ROOT)?.Name, log, c.Labels?.[LABEL.proxy]);
  }
  const { Volumes } = await docker.listVolumes({ filters: { label, dangling: ['true'] } });
  for (const v of (Volumes ?? []).filter((v) => hasAllLabels(v.Labels, label))) await removeQuietly(docker, undefined, v.Name, log);
  await releaseNetworks(docker, log);
  await removeProbes(docker, log);
  return containers.length;
}
