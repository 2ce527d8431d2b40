/**
 * The sandbox's images: pulling a chosen one, building the default data image and the user's
 * packages on top of it, and pruning what is outdated. What the adapters (VS Code, CLI) use.
 */
export { ensureImage, imagePresent, type PullProgress } from './pull';
export { DATA_PACKAGES, DATA_RECIPE, ROUTES, ROUTE_NAMES, pipRequirement, type DataPackage, type DataRecipe, type RouteName } from './recipe';
export { DATA_REPOSITORY, DEFAULT_HINTS, dataImageBuilding, ensureDataImage, findDataImage, planDataImage, type DataImage, type EnsureDataImageOptions, type ImageHints } from './dataImage';
export { PACKAGES_REPOSITORY, ensurePackagesImage, findPackagesImage, type EnsurePackagesImageOptions, type PackagesHints, type PackagesImage } from './derivedImage';
export { ImageBuildError, RequirementRejectedError } from './errors';
export { IMAGE_LABEL, imageDistributions } from './imageLabels';
export type { BuildPhase, BuildProgress, BuildProgressListener } from './buildProgress';
export { CREDENTIALS_PORT, CREDENTIALS_RUN_DIR, CREDENTIALS_UID, PROXY_CREDENTIALS_ENV, PROXY_CONF_ENV, PROXY_GATE_COMMAND, PROXY_HOSTS_ENV, PROXY_NEVER_ENV, PROXY_REACH_ENV, PROXY_SHARED_ENV, PROXY_REPOSITORY, PROXY_RUN_DIR, ensureProxyImage, proxyImageContext, proxyImageTag } from './proxyImage';
export { CHAT_REPOSITORY, CHAT_SITE, MAX_CHAT_GENERATIONS, NothingInstalled, buildChatImage, chatImageTag, configuredBase, listChatImages, removeChatImage, removeDropped, siteStamp, userSitePackages, type BetweenCalls, type ChatImage } from './chatImage';
export { MAX_CHAT_SITE_BYTES } from './chatSite';
export { asNamed, tagsIn } from './repoTags';
export { listImagesLabelled } from './labelled';
