import type Dockerode from 'dockerode';
import type { Logger } from '../../core/logger';
import type { Owner, SandboxSpec } from '../container';
import type { RuntimeChoice } from '../engine';
import type { DockerSandbox } from './dockerSandbox';
import { createSandbox } from './make';

/**
 * How the provider gets a new sandbox of its own (a session's, or a spare). On an engine it is
 * createSandbox; unit tests hand the provider fakes, so the provider's bookkeeping (spares,
 * leases, the maximum, retiring and idling out) is tested without one.
 */
export interface SandboxFactory {
  /** Created, hardened and started, its runner greeted; `labels` are added to the owner's. */
  create(spec: SandboxSpec, runtime: RuntimeChoice, owner: Owner, sessionDigest: string, labels?: Record<string, string>, madeFrom?: string): Promise<DockerSandbox>;
}

/** Sandboxes created on `docker`. */
export function engineSandboxes(docker: Dockerode, log: Logger): SandboxFactory {
  return { create: (spec, runtime, owner, sessionDigest, labels, madeFrom) => createSandbox({ docker, spec, runtime, owner, sessionDigest, log, labels, ...(madeFrom ? { madeFrom } : {}) }) };
}
