import type Dockerode from 'dockerode';
import { ToolError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { DockerSandbox, attachSandbox, createSharedSandbox } from '../sandbox';
import { ENGINE_DEADLINE_MS, engineFailure, engineRefused, isEngineFailure, readEngine, statusCode, type RuntimeChoice } from '../engine';
import { LABEL, removeQuietly, sandboxFailed, sharedSandboxName, type LockAhead, type Owner, type SandboxSpec } from '../container';

/** How long processes racing to create one session's sandbox keep trying (on a busy engine) before the call fails. */
const SHARED_CREATE_WAIT_MS = ENGINE_DEADLINE_MS;

export interface SharedContext {
  docker: Dockerode;
  owner: Owner;
  log: Logger;
  /** The session sandbox's lock, asked for before this process was ready to look (the CLI's). */
  lockAhead?: LockAhead;
}

/**
 * Of processes creating a session's sandbox at once, one creates it (its name comes from the
 * session) and the others adopt it. The engine reserves a name before the container is listed,
 * so a loser may find nothing for a moment: it looks again, and creates anew if the winner gave up.
 */
export async function createOrAdopt(ctx: SharedContext, digest: string, spec: SandboxSpec, runtime: RuntimeChoice, signal: AbortSignal): Promise<DockerSandbox> {
  const { docker, log, owner } = ctx;
  const giveUp = Date.now() + SHARED_CREATE_WAIT_MS;
  while (Date.now() < giveUp) {
    const made = await createSharedSandbox({ docker, spec, runtime, owner, sessionDigest: digest, log });
    if (made) return made;
    for (let i = 0; i < 20; i++) {
      const adopted = await adoptSession(ctx, digest, spec, () => Promise.resolve(runtime), signal);
      if (adopted) return adopted;
      if (signal.aborted) throw new ToolError('cancelled', 'The run was cancelled before it started.');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw sandboxFailed();
}

/**
 * The container named after the session `digest`, when it is one of ours for this owner kind;
 * undefined when there is none. An engine that fails to answer is an error.
 */
export function namedSessionSandbox(ctx: SharedContext, digest: string): Promise<Dockerode.ContainerInspectInfo | undefined> {
  const { docker, owner } = ctx;
  return readEngine(() => docker.getContainer(sharedSandboxName(owner.kind, digest)).inspect(), "the session's sandbox (inspect)").then(
    (info) => (info.Config.Labels?.[LABEL.managed] && info.Config.Labels[LABEL.ownerKind] === owner.kind ? info : undefined),
    (e: unknown) => {
      if (statusCode(e) === 404) return undefined;
      if (isEngineFailure(e)) throw engineFailure(e, docker);
      throw statusCode(e) !== undefined ? engineRefused(e, docker, "the session's sandbox (inspect)") : e;
    },
  );
}

/**
 * CLI sessions outlive the process: the container named after this session (a spare a session
 * took keeps the spare's labels: it is found by its name), else one carrying this session's
 * labels, locked for this process. A container that does not match the settings, or is really
 * gone or unusable, is removed; an engine that fails to answer fails the call and removes nothing.
 */
export async function adoptSession(
  ctx: SharedContext,
  digest: string,
  spec: SandboxSpec,
  /** The runtime to expect of a container with these labels (a kept one recorded its own). */
  runtimeOf: (labels: Record<string, string> | undefined) => Promise<RuntimeChoice>,
  signal: AbortSignal,
  /** namedSessionSandbox's answer, asked a moment ago (beside the spec): not asked again. */
  asked?: Promise<Dockerode.ContainerInspectInfo | undefined>,
): Promise<DockerSandbox | undefined> {
  const { docker, owner, log, lockAhead } = ctx;
  const named = await (asked ?? namedSessionSandbox(ctx, digest));
  const tryOne = async (id: string, name: string | undefined, labels: Record<string, string> | undefined, inspected?: Dockerode.ContainerInspectInfo): Promise<DockerSandbox | undefined> => {
    const runtime = await runtimeOf(labels);
    // The lock asked for ahead is by the session's name: only the container found by it can hold it.
    const attached = await attachSandbox(docker, id, spec, runtime, log, signal, inspected ? { inspected, ...(lockAhead ? { lockAhead } : {}) } : {});
    if (attached.kind === 'attached') return attached.sandbox;
    if (attached.kind === 'gone' || attached.kind === 'busy') return undefined;
    log.info(`sandbox ${name ?? id} of this session ${attached.reason}; removing it`);
    await removeQuietly(docker, id, attached.volume ?? name, log, labels?.[LABEL.proxy]);
    return undefined;
  };
  // By its name first (a kept session's usual case: no list needed), with what that inspect said.
  if (named) {
    const sandbox = await tryOne(named.Id, named.Name.replace(/^\//, ''), named.Config.Labels, named);
    if (sandbox) return sandbox;
  }
  const byLabels = await readEngine(
    () => docker.listContainers({ all: true, filters: { label: [`${LABEL.session}=${digest}`, `${LABEL.ownerKind}=${owner.kind}`] } }),
    "its list of the session's sandboxes",
  );
  for (const c of byLabels.filter((c) => c.Id !== named?.Id)) {
    const sandbox = await tryOne(c.Id, c.Names?.[0]?.replace(/^\//, ''), c.Labels);
    if (sandbox) return sandbox;
  }
  return undefined;
}
