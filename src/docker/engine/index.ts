/**
 * The engine: finding it as the docker CLI does (contexts, DOCKER_HOST, ssh, TLS), connecting,
 * knowing which one answered (Docker or Podman, which runtimes it has), and what its failures
 * mean. Nothing here knows what a sandbox is; every other room of src/docker stands on this one.
 */
export { createDockerClient, dockerCliEnv, engineOf, resolveEngine, type EngineTarget } from './connection';
export {
  ENGINE_DEADLINE_MS,
  SandboxGoneError,
  engineFailure,
  engineRefused,
  engineUnreachable,
  isEngineFailure,
  isGoneStatus,
  isNameTaken,
  isNoSpace,
  isUnreachable,
  readEngine,
  statusCode,
  withDeadline,
} from './errors';
export { followProgress, type ProgressEvent } from './progress';
export { engineIdentity, knownIdentity as engineIdentityOf, type EngineIdentity, type EngineKind } from './identity';
export { checkPodmanLimits } from './podmanHost';
export { checkEngineIdentity, engineStateOf, findPodman, isPermissionDenied, pingEngine, type EngineState, type PodmanFound } from './state';
export { expandSocketAddress, podmanCandidates, type PodmanCandidate } from './podmanSockets';
export { plainUnixSocket } from './plainSocket';
export { chooseRuntime, engineRuntimes, isGvisor, type RuntimeChoice, type RuntimeRequest } from './runtime';
