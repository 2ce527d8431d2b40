/**
 * The Dev Container backend, one concern per file: configuration and hashing, the Dev Containers
 * CLI (where it is, how it runs), the images it leaves on the engine, and the build tying them
 * together. The rest of the extension imports from here only; unit tests reach the files behind it.
 */
export { DEFAULT_BUILD_TIMEOUT_MS, ensureDevcontainerImage, planDevcontainerImage } from './build';
export type { DevcontainerImage, DevcontainerPlan, EnsureDevcontainerOptions } from './build';
export { locateDevcontainerCli } from './cliLocation';
export { configFiles, configHash, findDevcontainerConfig, inspectConfig } from './configuration';
export type { DevcontainerConfigInfo } from './configuration';
export { copySources } from './dockerfile';
export { DEVCONTAINER_LABEL, DEVCONTAINER_REPOSITORY, devcontainerImageTag, folderDigest, pruneDevcontainerImages } from './images';
export { parseJsonc } from './jsonc';
