/**
 * What a sandbox container is, before anything runs in it: its hardened spec (and where Podman
 * needs it said differently), its labels, the programs it runs as PID 1 and through exec, the
 * cross-process lock on a shared one, and the typed errors of making one.
 */
export { createFailure, sandboxFailed, translateEngine } from './errors';
export { CA_BUNDLE, CA_CERT, HOME_DIR, TLS_DIR, credentialEnv, PROGRAM_NAME, RUNS_DIR, SANDBOX_GID, SANDBOX_UID, SANDBOX_USER, WORK_ROOT, endAllSparingLines, killAllSparingSource } from './guest';
export { ExecStdout } from './execDemux';
export { guestEnded, oomKillCount, startGuest } from './guestExec';
export { LABEL, LABEL_SCHEMA, currentOwner, hasAllLabels, ownerLabels, runtimeFromLabels, runtimeLabels, sharedSandboxName, type Owner, type OwnerKind } from './labels';
export { SandboxLock } from './lock';
export { LockAhead, type HeldAhead } from './lockAhead';
export { PODMAN_RLIMITS, logPodmanDifferences } from './podmanSpec';
export {
  containerMatches,
  containerOptions,
  declaredVolumes,
  hardenedHostConfig,
  networkDigest,
  networkKey,
  removeQuietly,
  sameSpec,
  specKey,
  workAreaVolumeOptions,
  type ProxyTesting,
  type SandboxEgress,
  type SandboxNetwork,
  type SandboxSpec,
} from './spec';
