/**
 * The Docker layer's one door: what the adapters (VS Code, the CLI, the MCP server) and their
 * shared wiring use. src/docker/README.md draws the rooms behind it.
 */
export { aheadOnEngine, type LockAhead } from './ahead';
export { BACKEND_SETTINGS, chooseBackend, type BackendChoice, type BackendSetting } from './backend';
export { currentOwner, type Owner, type ProxyTesting, type SandboxSpec } from './container';
export { ensureDevcontainerImage, planDevcontainerImage } from './devcontainer';
export {
  checkEngineIdentity,
  createDockerClient,
  engineIdentityOf,
  engineStateOf,
  findPodman,
  pingEngine,
  resolveEngine,
  type EngineIdentity,
  type EngineState,
  type EngineTarget,
  type PodmanFound,
} from './engine';
export {
  ImageBuildError,
  RequirementRejectedError,
  ensureDataImage,
  ensurePackagesImage,
  findDataImage,
  findPackagesImage,
  type BuildProgress,
  type BuildProgressListener,
  type DataImage,
  type PackagesImage,
} from './images';
export { DockerSandboxProvider, HeldSpare, processIsAlive, removeCliSandboxes, removeOrphanedSandboxes, type ChatRecords, type ProviderOptions } from './pool';
