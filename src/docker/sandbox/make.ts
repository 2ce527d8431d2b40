/**
 * Making a sandbox: a new one for this process, a new one shared by processes (its name taken by
 * whoever comes first), or one an earlier or another process made, attached again.
 */
import { randomBytes } from 'node:crypto';
import type Dockerode from 'dockerode';
import { ToolError, describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import {
  LABEL,
  WORK_ROOT,
  networkDigest,
  containerMatches,
  containerOptions,
  createFailure,
  credentialEnv,
  declaredVolumes,
  ownerLabels,
  runtimeLabels,
  removeQuietly,
  sandboxFailed,
  sharedSandboxName,
  translateEngine,
  workAreaVolumeOptions,
  type LockAhead,
  type Owner,
  type SandboxEgress,
  type SandboxSpec,
} from '../container';
import { ENGINE_DEADLINE_MS, isEngineFailure, isNameTaken, statusCode, withDeadline, type RuntimeChoice } from '../engine';
import { ensureEgress, makeSidecar, proxyEnv, proxyRunning, releaseEgress, removeSidecar, sandboxNetworkName, sidecarName } from '../network';
import { DockerSandbox, NETWORK_LOG_HINT } from './dockerSandbox';

/** What a new sandbox is made of, and for whom. */
export interface NewSandbox {
  docker: Dockerode;
  spec: SandboxSpec;
  runtime: RuntimeChoice;
  owner: Owner;
  sessionDigest: string;
  log: Logger;
  /** Added to the owner's labels (a spare's pool). */
  labels?: Record<string, string>;
  /**
   * The image the container is made from when not the spec's: the chat's prepared image, which is
   * the spec's image plus the packages the chat installed (the sandbox keeps the spec's, so its
   * settings compare, and its spares are made, as for any other sandbox of those settings).
   */
  madeFrom?: string;
}

/** What re-attaching to a sandbox found by its labels gave. */
export type AttachResult =
  | { kind: 'attached'; sandbox: DockerSandbox }
  /** Removed meanwhile: nothing to clean up. */
  | { kind: 'gone' }
  /** It exists but cannot serve this spec (other settings, no work area, cannot start): remove it. */
  | { kind: 'unusable'; reason: string; volume?: string }
  /** Another process holds its lock (asked with `onlyIfFree`). */
  | { kind: 'busy' };

/** A new sandbox for this process alone (VS Code windows, tests). */
export async function createSandbox(request: NewSandbox): Promise<DockerSandbox> {
  const { docker, spec, runtime, sessionDigest, log } = request;
  const name = `codeact-${sessionDigest.slice(0, 12)}-${randomBytes(3).toString('hex')}`;
  const made = await make(request, name, false);
  if (!made) throw sandboxFailed();
  try {
    await made.start();
  } catch (e) {
    await made.remove();
    // An image without python3 fails here, when the runtime looks for the command.
    throw createFailure(e, spec.image, docker);
  }
  log.info(`sandbox ${name} created from ${spec.image} under ${runtime.name} (${runtime.reason}) for session ${sessionDigest}`);
  return made;
}

/**
 * A session's sandbox shared by processes (CLI --session): its name comes from the session, so of
 * two processes creating it at once, one succeeds and the other gets undefined (and adopts it).
 * Returned started, locked for this process, with the runner greeted under the lock.
 */
export async function createSharedSandbox(request: NewSandbox): Promise<DockerSandbox | undefined> {
  const { docker, spec, runtime, owner, sessionDigest, log } = request;
  const name = sharedSandboxName(owner.kind, sessionDigest);
  const made = await make(request, name, true);
  if (!made) return undefined;
  try {
    await made.start({ greet: false });
    await made.lockHolder.acquire(new AbortController().signal);
    made.runner?.greet();
  } catch (e) {
    await made.remove();
    throw createFailure(e, spec.image, docker);
  }
  log.info(`sandbox ${name} created from ${spec.image} under ${runtime.name} (${runtime.reason}) for session ${sessionDigest}`);
  return made;
}

/** Creates the work-area volume and the container; undefined when `shared` and the name is taken. */
async function make(request: NewSandbox, name: string, shared: boolean): Promise<DockerSandbox | undefined> {
  const { docker, spec, runtime, log } = request;
  // Podman, and a sandbox with credentials on either engine: the sandbox joins a proxy of its own
  // (sidecar.ts), made first (with credentials, its CA is the sandbox's alone).
  const sidecar = spec.network && (runtime.engine === 'podman' || spec.network.credentials) ? sidecarName(name) : undefined;
  // Docker: the sandbox's own internal network, which only the policy's proxy joins (egress.ts).
  const egressNetwork = spec.network && !sidecar ? sandboxNetworkName(name) : undefined;
  const labels: Record<string, string> = {
    ...ownerLabels(request.owner, request.sessionDigest),
    ...runtimeLabels(spec.runtime, runtime),
    ...(spec.network ? { [LABEL.network]: networkDigest(spec.network) } : {}),
    ...(sidecar ? { [LABEL.proxy]: sidecar } : {}),
    ...(egressNetwork ? { [LABEL.egressNetwork]: egressNetwork } : {}),
    ...request.labels,
  };
  let containerId: string | undefined;
  try {
    // Creating a volume whose name exists returns the existing one (the other process's).
    await withDeadline(docker.createVolume(workAreaVolumeOptions(name, spec.limits, labels, runtime.engine)), ENGINE_DEADLINE_MS, 'create volume');
    const imageVolumes = await declaredVolumes(docker, spec.image, ENGINE_DEADLINE_MS);
    const egressOf = async (): Promise<SandboxEgress | undefined> => {
      if (!spec.network) return undefined;
      const common = { docker, target: spec.network, log, logHint: NETWORK_LOG_HINT, version: request.owner.version };
      if (sidecar) {
        const proxy = await makeSidecar({ ...common, engine: runtime.engine, sandboxName: name });
        credentialCa = proxy.ca;
        const standIns = spec.network.credentials?.standIns ?? {};
        return { network: proxy.network, env: [...proxyEnv(proxy), ...(proxy.ca ? credentialEnv(standIns) : [])], joinsProxy: true };
      }
      const egress = await ensureEgress({ ...common, engine: runtime.engine, network: egressNetwork!, make: true });
      return { network: egress.network, env: proxyEnv(egress) };
    };
    let credentialCa: string | undefined;
    let egress = await egressOf();
    const labelled = () => (credentialCa ? { ...labels, [LABEL.credentialCa]: Buffer.from(credentialCa).toString('base64') } : labels);
    const create = () => withDeadline(docker.createContainer(containerOptions(name, request.madeFrom ? { ...spec, image: request.madeFrom } : spec, labelled(), imageVolumes, runtime, egress)), ENGINE_DEADLINE_MS, 'create container');
    // The network's last sandbox, removed by another process a moment ago, took the network with
    // it (Docker), or a cleanup took this sandbox's proxy before the sandbox was made (Podman):
    // made again, once.
    const container = await create().catch(async (e: unknown) => {
      const again = sidecar ? !(await proxyRunning(docker, { proxyName: sidecar })) : spec.network !== undefined && statusCode(e) === 404;
      if (!again) throw e;
      if (sidecar) await removeSidecar(docker, sidecar, log);
      egress = await egressOf();
      return create();
    });
    containerId = container.id;
    const sandbox = new DockerSandbox(docker, container.id, name, name, spec, runtime, log);
    sandbox.ownerVersion = request.owner.version;
    sandbox.announceNetwork = spec.network !== undefined;
    sandbox.sidecar = sidecar;
    sandbox.egressNetwork = egressNetwork;
    sandbox.credentialCa = credentialCa;
    return sandbox;
  } catch (e) {
    // The name is the other process's sandbox: leave it (and its volume) alone; the network made
    // for this attempt is this process's own, and goes.
    if (shared && containerId === undefined && isNameTaken(e)) {
      if (egressNetwork && spec.network) await releaseEgress(docker, networkDigest(spec.network), egressNetwork, log).catch(() => {});
      return undefined;
    }
    await removeQuietly(docker, containerId, name, log);
    if (sidecar) await removeSidecar(docker, sidecar, log);
    if (egressNetwork && spec.network) await releaseEgress(docker, networkDigest(spec.network), egressNetwork, log).catch(() => {});
    throw createFailure(e, request.madeFrom ?? spec.image, docker);
  }
}

/**
 * Re-attaches to a sandbox created by an earlier or another process (CLI --session), locked for
 * this process. An engine that does not answer is an error (the container is not judged by it).
 */
export async function attachSandbox(
  docker: Dockerode,
  containerId: string,
  spec: SandboxSpec,
  runtime: RuntimeChoice,
  log: Logger,
  signal: AbortSignal,
  /**
   * `inspected`: what the caller's inspect of this container said a moment ago (not asked again).
   * `lockAhead`: its lock asked for earlier, used when it is held in this very container.
   */
  options: { onlyIfFree?: boolean; inspected?: Dockerode.ContainerInspectInfo; lockAhead?: LockAhead } = {},
): Promise<AttachResult> {
  let info: Dockerode.ContainerInspectInfo;
  try {
    info = options.inspected ?? (await withDeadline(docker.getContainer(containerId).inspect(), ENGINE_DEADLINE_MS, 'inspect container'));
  } catch (e) {
    if (statusCode(e) === 404) return { kind: 'gone' };
    throw translateEngine(e, docker);
  }
  const volume = info.Mounts?.find((m) => m.Destination === WORK_ROOT)?.Name;
  if (volume === undefined) return { kind: 'unusable', reason: 'has no work area' };
  if (!containerMatches(info, spec, runtime)) return { kind: 'unusable', reason: 'no longer matches the settings', volume };
  const sandbox = new DockerSandbox(docker, info.Id, info.Name.replace(/^\//, ''), volume, spec, runtime, log);
  sandbox.ownerVersion = info.Config.Labels?.[LABEL.version];
  sandbox.sidecar = info.Config.Labels?.[LABEL.proxy];
  sandbox.egressNetwork = info.Config.Labels?.[LABEL.egressNetwork];
  const ca = info.Config.Labels?.[LABEL.credentialCa];
  sandbox.credentialCa = ca ? Buffer.from(ca, 'base64').toString('utf8') : undefined;
  try {
    // "created": another process made it a moment ago and is starting it; anything else stopped
    // (an engine restart) is started again here.
    if (!info.State.Running) await sandbox.startShared(info.State.Status !== 'created');
    if (options.onlyIfFree) {
      if (!(await sandbox.lockHolder.tryAcquire(signal))) return { kind: 'busy' };
      if (!sandbox.runner || sandbox.runner.state === 'broken') await sandbox.reconnect();
    } else {
      if (options.lockAhead) await takeLockAhead(sandbox, options.lockAhead, signal);
      await sandbox.lock(signal);
    }
    // Whoever started it laid the work area out, and a warm runner makes the same folders as it
    // starts. Without a runner, doing it again covers a start that another process never finished.
    if (spec.warmRunner === false || !info.State.Running) await sandbox.layOutWorkArea();
    return { kind: 'attached', sandbox };
  } catch (e) {
    sandbox.detach();
    if (e instanceof ToolError && e.code === 'cancelled') throw e;
    if (statusCode(e) === 404) return { kind: 'gone' };
    if (isEngineFailure(e)) throw translateEngine(e, docker);
    const status = statusCode(e);
    // 409: being removed, restarting or paused by another process on a busy engine: not ours to remove.
    if (status === 409) return { kind: 'gone' };
    if (status !== undefined && status >= 400 && status < 500) return { kind: 'unusable', reason: `cannot be started (${describeError(e)})`, volume };
    throw translateEngine(e, docker);
  }
}

/** Makes the lock taken ahead `sandbox`'s own when it is held in that container; else lets it go (the usual lock follows). */
async function takeLockAhead(sandbox: DockerSandbox, ahead: LockAhead, signal: AbortSignal): Promise<void> {
  const held = await ahead.claim(signal);
  if (held && !(held.containerId === sandbox.id && sandbox.lockHolder.takeOver(held.lock))) held.lock.release();
  else if (held && ahead.ofSpare) sandbox.knownFresh();
}
