/**
 * The packages the user adds (codeactSandbox.pythonPackages): the data image plus a pip install
 * of their requirement strings, tagged by the hash of (base image id, requirements), built with
 * network during the build only. A requirement pip rejects fails the call with a sentence naming
 * the setting and the package; the sandbox never silently runs an image without it.
 */
import type Dockerode from 'dockerode';
import { ToolError, isToolError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import type { InstalledDistribution } from '../../core/missingModule';
import { RequirementListError, normalizeProjectName, normalizeRequirements, requirementName } from '../../core/requirements';
import { engineFailure, isEngineFailure } from '../engine';
import { BuildFailed, labelImage, readListing, runBuild } from './build';
import type { BuildProgressListener } from './buildProgress';
import { derivedHash, derivedImageContext } from './dockerfile';
import { ImageBuildError, RequirementRejectedError } from './errors';
import { IMAGE_LABEL, imageLabels, ourImage } from './imageLabels';
import { pruneImages } from './prune';
import { type DataImage, DEFAULT_HINTS, duration, type ImageHints } from './dataImage';
import { shareBuild, type StopReason } from './sharedBuild';

export const PACKAGES_REPOSITORY = 'codeact-sandbox/data-packages';
export const DEFAULT_PACKAGES_BUILD_TIMEOUT_MS = 15 * 60_000;
/** Packages images of other requirement lists kept per engine (other windows, other workspaces). */
const KEEP_OTHER_PACKAGES_IMAGES = 3;

export interface PackagesHints extends ImageHints {
  /** "the codeactSandbox.pythonPackages setting", "--packages". */
  packagesSetting: string;
}

export interface PackagesImage {
  tag: string;
  id: string;
  /** The requirements as installed: trimmed, without duplicates, sorted. */
  requirements: string[];
  built: boolean;
  distributions: InstalledDistribution[];
}

export interface EnsurePackagesImageOptions {
  docker: Dockerode;
  log: Logger;
  base: DataImage;
  requirements: readonly string[];
  /** pip's --index-url (default: pip's own, PyPI). */
  indexUrl?: string;
  /** The build's network (default the engine's; "host" reaches an index on the engine's loopback). */
  networkMode?: string;
  signal?: AbortSignal;
  buildSignal?: AbortSignal;
  onProgress?: BuildProgressListener;
  timeoutMs?: number;
  repository?: string;
  hints?: Partial<PackagesHints>;
}

/** The base image with the requirements installed; the base itself when there are none. */
export async function ensurePackagesImage(o: EnsurePackagesImageOptions): Promise<PackagesImage> {
  const hints: PackagesHints = { ...DEFAULT_HINTS, packagesSetting: 'the codeactSandbox.pythonPackages setting', ...o.hints };
  let requirements: string[];
  try {
    requirements = normalizeRequirements(o.requirements);
  } catch (e) {
    if (!(e instanceof RequirementListError)) throw e;
    const entry = JSON.stringify(e.entry.slice(0, 100));
    throw new ImageBuildError(
      'invalid_settings',
      `The entry ${entry} of ${hints.packagesSetting} is not a pip requirement, so the program was not run. Ask the user to write it as a package name, optionally with a version (for example "requests==2.32.3").`,
      `${entry} in ${hints.packagesSetting} is not a pip requirement; write a package name, optionally with a version ("requests==2.32.3").`,
    );
  }
  if (!requirements.length) return { tag: o.base.tag, id: o.base.id, requirements, built: false, distributions: o.base.distributions };
  const hash = derivedHash(o.base.id, requirements);
  const repository = o.repository ?? PACKAGES_REPOSITORY;
  const tag = `${repository}:${hash.slice(0, 16)}`;
  const present = await find(o.docker, tag, hash);
  if (present) return { ...present, requirements };
  const timeoutMs = o.timeoutMs ?? DEFAULT_PACKAGES_BUILD_TIMEOUT_MS;
  return shareBuild(
    o.docker,
    `packages:${tag}`,
    { signal: o.signal, buildSignal: o.buildSignal, onProgress: o.onProgress, timeoutMs },
    (signal, emit, stopped) => build(o, { tag, hash, requirements, repository, hints, timeoutMs }, signal, emit, stopped),
    () => new ToolError('cancelled', 'The run was cancelled while the sandbox image with the extra packages was being built; the build goes on.'),
  );
}

/** The packages image of these requirements when the engine has it, else undefined; never builds (pre-warming). */
export async function findPackagesImage(docker: Dockerode, base: DataImage, requirements: readonly string[], repository = PACKAGES_REPOSITORY): Promise<PackagesImage | undefined> {
  const normalized = normalizeRequirements(requirements);
  if (!normalized.length) return { tag: base.tag, id: base.id, requirements: normalized, built: false, distributions: base.distributions };
  const hash = derivedHash(base.id, normalized);
  const present = await find(docker, `${repository}:${hash.slice(0, 16)}`, hash);
  return present && { ...present, requirements: normalized };
}

async function find(docker: Dockerode, tag: string, hash: string): Promise<Omit<PackagesImage, 'requirements'> | undefined> {
  try {
    const info = await docker.getImage(tag).inspect();
    const ours = ourImage(info);
    if (ours?.kind === 'packages' && ours.hash === hash && ours.distributions) return { tag, id: info.Id, built: false, distributions: ours.distributions };
  } catch (e) {
    if (isEngineFailure(e)) throw engineFailure(e, docker);
  }
  return undefined;
}

interface Plan {
  tag: string;
  hash: string;
  requirements: string[];
  repository: string;
  hints: PackagesHints;
  timeoutMs: number;
}

async function build(o: EnsurePackagesImageOptions, p: Plan, signal: AbortSignal, emit: BuildProgressListener, stopped: () => StopReason | undefined): Promise<PackagesImage> {
  const { docker, log } = o;
  const staging = `${p.repository}:build-${p.hash.slice(0, 16)}`;
  const requested = [...o.base.distributions.filter((d) => d.requested).map((d) => d.name), ...p.requirements.map((r) => requirementName(r)!)];
  const context = derivedImageContext({ base: o.base.tag, route: o.base.route, requirements: p.requirements, requested, ...(o.indexUrl ? { indexUrl: o.indexUrl } : {}) });
  const labels = imageLabels('packages', p.hash, o.base.route, { [IMAGE_LABEL.base]: o.base.id, [IMAGE_LABEL.requirements]: JSON.stringify(p.requirements) });
  log.info(
    `packages image: building ${p.tag} on ${o.base.tag} with ${p.requirements.join(' ')}` +
      `${o.indexUrl ? ` from ${o.indexUrl}` : ''}${o.networkMode ? ` (build network ${o.networkMode})` : ''}`,
  );
  const started = Date.now();
  try {
    if (signal.aborted) throw new BuildFailed('the build was stopped before it started', []);
    await runBuild({ docker, context, tag: staging, labels, networkMode: o.networkMode, signal, log, logPrefix: 'packages image build', onProgress: emit });
    emit({ phase: 'finishing', message: 'Labelling the image with what it has' });
    const distributions = await readListing(docker, staging);
    const id = await labelImage(docker, staging, p.tag, { ...labels, [IMAGE_LABEL.distributions]: JSON.stringify(distributions) }, signal, log);
    log.info(`packages image ${p.tag} built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    await pruneImages(docker, log, { repository: p.repository, kind: 'packages', keep: [p.tag], keepBases: [o.base.id], maxOthers: KEEP_OTHER_PACKAGES_IMAGES }).catch(() => {});
    return { tag: p.tag, id, requirements: p.requirements, built: true, distributions };
  } catch (e) {
    if (signal.aborted) throw stopError(stopped() ?? 'cancelled', p.hints, p.timeoutMs);
    if (isToolError(e)) throw e;
    if (isEngineFailure(e) && !(e instanceof BuildFailed)) throw engineFailure(e, docker);
    throw rejected(e, p.requirements, p.hints);
  } finally {
    await docker.getImage(staging).remove().catch(() => {});
  }
}

/**
 * What pip said about which requirement, from its own output (the only place it says it). The
 * full output is in the log already; the model gets one sentence naming the entry.
 */
export function rejected(e: unknown, requirements: readonly string[], hints: PackagesHints): ImageBuildError {
  const tail = e instanceof BuildFailed ? e.tail.join('\n') : '';
  const byName = (name: string) => requirements.find((r) => normalizeProjectName(requirementName(r) ?? '') === normalizeProjectName(name));
  const offline = /Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|Network is unreachable|Connection refused|ConnectTimeoutError|ProxyError|SSLError/.test(tail);
  const notFound = /No matching distribution found for ([A-Za-z0-9._-]+)/.exec(tail)?.[1];
  const entry = notFound ? byName(notFound) : undefined;
  const see = `pip's output is in ${hints.log}`;
  if (offline) {
    return new ImageBuildError(
      'build_failed',
      `The packages in ${hints.packagesSetting} could not be installed because the build could not reach the package index, so the program was not run. Ask the user to check the network of the Docker engine (${see}).`,
      `Installing ${hints.packagesSetting} failed: the image build could not reach the package index. ${capitalized(see)}.`,
      { cause: e },
    );
  }
  if (entry) {
    return new RequirementRejectedError(
      entry,
      `pip found no package matching "${entry}" from ${hints.packagesSetting}, so the sandbox image with it could not be built and the program was not run. Ask the user to correct or remove that entry (${see}).`,
      `pip found no package matching "${entry}" (${hints.packagesSetting}). ${capitalized(see)}.`,
      { cause: e },
    );
  }
  const list = requirements.map((r) => `"${r}"`).join(', ');
  return new ImageBuildError(
    'build_failed',
    `pip could not install ${list} from ${hints.packagesSetting}, so the sandbox image with them could not be built and the program was not run. Ask the user to look at pip's output in ${hints.log} and to correct that setting.`,
    `Installing ${hints.packagesSetting} (${list}) failed. ${capitalized(see)}.`,
    { cause: e },
  );
}

function stopError(why: StopReason, hints: PackagesHints, timeoutMs: number): ImageBuildError {
  if (why === 'timeout') {
    const within = duration(timeoutMs);
    return new ImageBuildError(
      'build_failed',
      `Installing the packages of ${hints.packagesSetting} did not finish within ${within} and was stopped, so the program was not run. Ask the user to look at pip's output in ${hints.log}.`,
      `Installing ${hints.packagesSetting} took longer than ${within} and was stopped. Pip's output is in ${hints.log}.`,
    );
  }
  return new ImageBuildError(
    'cancelled',
    `Installing the packages of ${hints.packagesSetting} was cancelled, so the program was not run. Ask the user to start it again with ${hints.prepare}.`,
    `Installing ${hints.packagesSetting} was cancelled. Run ${hints.prepare} to install them.`,
  );
}

function capitalized(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
