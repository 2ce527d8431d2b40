import * as os from 'node:os';
import type { EngineKind, RuntimeChoice, RuntimeRequest } from '../engine';

/** Every container and volume this project creates carries these labels, so it can be found again. */
export const LABEL = {
  /** Marks an object as ours; the value is the schema of these labels. */
  managed: 'dev.codeact-sandbox.managed',
  /**
   * "vscode" (owned by a window), "mcp" (owned by an MCP server process: one client connection)
   * or "cli" (owned by a --session name, removed by `cleanup`).
   */
  ownerKind: 'dev.codeact-sandbox.owner-kind',
  /** host/pid of the owning process: a window or server that crashed leaves containers whose pid is dead. */
  ownerHost: 'dev.codeact-sandbox.owner-host',
  ownerPid: 'dev.codeact-sandbox.owner-pid',
  /** Digest of the session key (never the key itself: it can hold ids). */
  session: 'dev.codeact-sandbox.session',
  /**
   * Spares only: the pool they belong to (a digest of the settings they were made for). A spare's
   * session label is "spare" for good (labels cannot change); a session that takes one renames it.
   */
  pool: 'dev.codeact-sandbox.pool',
  version: 'dev.codeact-sandbox.version',
  /**
   * The runtime a sandbox was made under (its name, what HostConfig.Runtime was given, why) and
   * the runtime setting it was made for: a kept session is adopted without asking the engine for
   * its runtimes again (Podman's info takes most of a second).
   */
  runtime: 'dev.codeact-sandbox.runtime',
  runtimeOption: 'dev.codeact-sandbox.runtime-option',
  runtimeReason: 'dev.codeact-sandbox.runtime-reason',
  runtimeRequest: 'dev.codeact-sandbox.runtime-request',
  /** Sandboxes with a network: the digest of the policy (networkDigest) whose network they joined. */
  network: 'dev.codeact-sandbox.network',
  /** Docker sandboxes with a network: the name of their own internal network (egress.ts). */
  egressNetwork: 'dev.codeact-sandbox.egress-network',
  /** Podman sandboxes with a network: the name of their own proxy, whose namespace they joined. */
  proxy: 'dev.codeact-sandbox.proxy',
  /**
   * Sandboxes with credentials: the certificate (PEM, base64) of the CA made for the sandbox alone,
   * which it trusts; public, and kept here so another process attaching lays it out again.
   */
  credentialCa: 'dev.codeact-sandbox.credential-ca',
} as const;

export const LABEL_SCHEMA = '1';

export type OwnerKind = 'vscode' | 'mcp' | 'cli';

export interface Owner {
  kind: OwnerKind;
  host: string;
  pid: number;
  version: string;
}

export function currentOwner(kind: OwnerKind, version: string): Owner {
  return { kind, host: os.hostname(), pid: process.pid, version };
}

export function ownerLabels(owner: Owner, sessionDigest: string): Record<string, string> {
  return {
    [LABEL.managed]: LABEL_SCHEMA,
    [LABEL.ownerKind]: owner.kind,
    [LABEL.ownerHost]: owner.host,
    [LABEL.ownerPid]: String(owner.pid),
    [LABEL.session]: sessionDigest,
    [LABEL.version]: owner.version,
  };
}

export function runtimeLabels(request: RuntimeRequest | undefined, choice: RuntimeChoice): Record<string, string> {
  return {
    [LABEL.runtimeRequest]: request ?? '',
    [LABEL.runtime]: choice.name,
    [LABEL.runtimeOption]: choice.runtime ?? '',
    [LABEL.runtimeReason]: choice.reason,
  };
}

/** The runtime `labels` recorded, when the sandbox was made for the runtime setting `request`; else undefined. */
export function runtimeFromLabels(labels: Record<string, string> | null | undefined, request: RuntimeRequest | undefined, engine: EngineKind): RuntimeChoice | undefined {
  const name = labels?.[LABEL.runtime];
  if (!labels || !name || labels[LABEL.runtimeRequest] !== (request ?? '')) return undefined;
  return { name, runtime: labels[LABEL.runtimeOption] || undefined, reason: labels[LABEL.runtimeReason] ?? 'as the sandbox was made', engine };
}

/**
 * Whether `labels` carry every label filter (`key` or `key=value`) of a list call. Podman 4 joins
 * several label filters of a volume or image list with "or" (Docker, and Podman's container
 * list, with "and"), so a list by labels is checked again here before anything is removed.
 */
export function hasAllLabels(labels: Record<string, string> | null | undefined, filters: readonly string[]): boolean {
  return filters.every((f) => {
    const at = f.indexOf('=');
    return at < 0 ? labels?.[f] !== undefined : labels?.[f.slice(0, at)] === f.slice(at + 1);
  });
}

/** The name of a sandbox processes share (CLI --session): derived from the session, so the engine keeps it unique. */
export function sharedSandboxName(kind: OwnerKind, sessionDigest: string): string {
  return `codeact-${kind}-${sessionDigest.slice(0, 24)}`;
}
