/**
 * The default sandbox image: the data stack, built on the user's engine from the recipe, once,
 * and reused until the recipe changes. Routes are tried in order (pip from the official Python
 * image, then apt from a Debian base); a route whose base cannot be had, or whose build fails,
 * gives way to the next, and the log says why.
 */
import type Dockerode from 'dockerode';
import { ToolError, describeError, isToolError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import type { InstalledDistribution } from '../../core/missingModule';
import { engineFailure, isEngineFailure } from '../engine';
import { BuildFailed, labelImage, readListing, runBuild } from './build';
import type { BuildProgressListener } from './buildProgress';
import { dataImageContext, recipeHash, type BuildContext } from './dockerfile';
import { ImageBuildError } from './errors';
import { IMAGE_LABEL, imageLabels, ourImage } from './imageLabels';
import { pruneImages } from './prune';
import { DATA_RECIPE, ROUTES, ROUTE_NAMES, type DataRecipe, type RouteName } from './recipe';
import { PullCancelled, probeBase, startFailureText } from './routes';
import { buildRunning, shareBuild, type StopReason } from './sharedBuild';

export const DATA_REPOSITORY = 'codeact-sandbox/data';
export const DEFAULT_DATA_BUILD_TIMEOUT_MS = 30 * 60_000;

/** How the sentences name what the user can act on; each adapter says it its own way. */
export interface ImageHints {
  /** "the codeactSandbox.image setting", "--image". */
  imageSetting: string;
  /** How to start the build again: "the command CodeAct Sandbox: Prepare Sandbox Image". */
  prepare: string;
  /** Where the build log is: "the CodeAct Sandbox output channel". */
  log: string;
}

export const DEFAULT_HINTS: ImageHints = {
  imageSetting: 'the codeactSandbox.image setting',
  prepare: 'the command "CodeAct Sandbox: Prepare Sandbox Image"',
  log: 'the CodeAct Sandbox output channel',
};

export interface DataImage {
  tag: string;
  id: string;
  route: RouteName;
  recipeHash: string;
  /** True when this call built it. */
  built: boolean;
  /** What the image has (its labels), for the model's hints. */
  distributions: InstalledDistribution[];
}

export interface RoutePlan {
  route: RouteName;
  base: string;
  hash: string;
  tag: string;
  context: BuildContext;
}

export interface DataImageTarget {
  /** Default: the shipped recipe. Tests build smaller ones. */
  recipe?: DataRecipe;
  /** Default codeact-sandbox/data. */
  repository?: string;
  /** Routes in the order they are tried; default pip, debian. */
  routes?: readonly RouteName[];
}

/** The tag and build context each route would use; nothing is asked of an engine. */
export function planDataImage(t: DataImageTarget = {}): RoutePlan[] {
  const repository = t.repository ?? DATA_REPOSITORY;
  return (t.routes ?? ROUTE_NAMES).map((route) => {
    const context = dataImageContext(route, t.recipe ?? DATA_RECIPE);
    const hash = recipeHash(route, context);
    return { route, base: ROUTES[route].base, hash, tag: `${repository}:${route}-${hash.slice(0, 16)}`, context };
  });
}

/** The data image of the current recipe already on the engine (any route), else undefined. */
export async function findDataImage(docker: Dockerode, t: DataImageTarget = {}): Promise<DataImage | undefined> {
  const plans = planDataImage(t);
  // Every route's tag asked at once (one round trip on the way of every call, not one per route),
  // then read in the routes' order, as if asked one after the other.
  const answers = await Promise.allSettled(plans.map((plan) => docker.getImage(plan.tag).inspect()));
  for (const [i, plan] of plans.entries()) {
    const answer = answers[i]!;
    if (answer.status === 'rejected') {
      if (isEngineFailure(answer.reason)) throw engineFailure(answer.reason, docker);
      continue;
    }
    const info = answer.value;
    const ours = ourImage(info);
    if (ours?.kind === 'data' && ours.hash === plan.hash && ours.distributions) {
      return { tag: plan.tag, id: info.Id, route: plan.route, recipeHash: plan.hash, built: false, distributions: ours.distributions };
    }
  }
  return undefined;
}

export interface EnsureDataImageOptions extends DataImageTarget {
  docker: Dockerode;
  log: Logger;
  /** Ends this caller's wait; also stops the build when no buildSignal is given (see sharedBuild). */
  signal?: AbortSignal;
  /** Stops the build, for every caller waiting on it. */
  buildSignal?: AbortSignal;
  onProgress?: BuildProgressListener;
  /** Default 30 minutes. */
  timeoutMs?: number;
  /** Build even when the image exists, without cached layers (a "rebuild" command). */
  force?: boolean;
  hints?: Partial<ImageHints>;
}

/** The data image of the current recipe: found by tag, else built (one build per engine at a time). */
export async function ensureDataImage(o: EnsureDataImageOptions): Promise<DataImage> {
  if (!o.force) {
    const present = await findDataImage(o.docker, o);
    if (present) {
      o.log.debug(`data image ${present.tag} (${present.route} route) is up to date`);
      return present;
    }
  }
  const hints = { ...DEFAULT_HINTS, ...o.hints };
  const plans = planDataImage(o);
  const timeoutMs = o.timeoutMs ?? DEFAULT_DATA_BUILD_TIMEOUT_MS;
  return shareBuild(
    o.docker,
    buildKey(plans),
    { signal: o.signal, buildSignal: o.buildSignal, onProgress: o.onProgress, timeoutMs },
    (signal, emit, stopped) => buildFirstRoute(o, plans, hints, timeoutMs, signal, emit, stopped),
    () => new ToolError('cancelled', 'The run was cancelled while the sandbox image was being built; the build goes on, and a later call uses the image once it is ready.'),
  );
}

function buildKey(plans: RoutePlan[]): string {
  return `data:${plans.map((p) => p.tag).join(',')}`;
}

/** True while this process builds the data image on this engine (for a status bar: "building sandbox image"). */
export function dataImageBuilding(docker: Dockerode, t: DataImageTarget = {}): boolean {
  return buildRunning(docker, buildKey(planDataImage(t)));
}

interface Attempt {
  route: RouteName;
  /** Why it did not give an image, for the log and the user. */
  reason: string;
  started: boolean;
}

async function buildFirstRoute(
  o: EnsureDataImageOptions,
  plans: RoutePlan[],
  hints: ImageHints,
  timeoutMs: number,
  signal: AbortSignal,
  emit: BuildProgressListener,
  stopped: () => StopReason | undefined,
): Promise<DataImage> {
  const { docker, log } = o;
  const attempts: Attempt[] = [];
  const stop = () => stopError(stopped() ?? 'cancelled', hints, timeoutMs);
  for (const plan of plans) {
    if (signal.aborted) throw stop();
    emit({ phase: 'choosing-route', message: `Checking the ${plan.route} route (${plan.base})` });
    let start;
    try {
      start = await probeBase(docker, plan.base, { signal, log, onProgress: emit });
    } catch (e) {
      if (e instanceof PullCancelled || signal.aborted) throw stop();
      throw e;
    }
    if (!start.ok) {
      const reason = startFailureText(plan.base, start.failure);
      log.warn(`data image: the ${plan.route} route cannot start: ${reason} (${start.detail})`);
      attempts.push({ route: plan.route, reason, started: false });
      continue;
    }
    log.info(
      `data image: building ${plan.tag} by the ${plan.route} route (${ROUTES[plan.route].installs}) from ${plan.base}, ${start.how === 'present' ? 'found on the engine' : 'pulled'}` +
        (attempts.length ? `; ${attempts.map((a) => `${a.route} route: ${a.reason}`).join('; ')}` : ''),
    );
    try {
      if (signal.aborted) throw stop();
      const image = await buildRoute(o, plan, signal, emit);
      await pruneImages(docker, log, { repository: o.repository ?? DATA_REPOSITORY, kind: 'data', keep: plans.map((p) => p.tag) }).catch((e: unknown) =>
        log.warn(`could not prune old data images: ${describeError(e)}`),
      );
      return image;
    } catch (e) {
      if (signal.aborted) throw stop();
      if (isToolError(e)) throw e;
      if (isEngineFailure(e) && !(e instanceof BuildFailed)) throw engineFailure(e, docker);
      const reason = `its build failed (${e instanceof BuildFailed ? e.message : describeError(e)})`;
      log.error(`data image: the ${plan.route} route failed: ${reason}; the build log is above`);
      attempts.push({ route: plan.route, reason, started: true });
    }
  }
  throw noImage(attempts, plans, hints);
}

async function buildRoute(o: EnsureDataImageOptions, plan: RoutePlan, signal: AbortSignal, emit: BuildProgressListener): Promise<DataImage> {
  const { docker, log } = o;
  const repository = o.repository ?? DATA_REPOSITORY;
  const staging = `${repository}:build-${plan.route}-${plan.hash.slice(0, 16)}`;
  const labels = imageLabels('data', plan.hash, plan.route);
  // A forced rebuild moves the tag; the image it leaves behind is ours to remove.
  const previous = o.force ? await docker.getImage(plan.tag).inspect().then((i) => i.Id, () => undefined) : undefined;
  const started = Date.now();
  try {
    await runBuild({ docker, context: plan.context, tag: staging, labels, signal, log, logPrefix: `data image build (${plan.route})`, onProgress: emit, noCache: o.force });
    emit({ phase: 'finishing', message: 'Labelling the image with what it has' });
    const distributions = await readListing(docker, staging);
    const id = await labelImage(docker, staging, plan.tag, { ...labels, [IMAGE_LABEL.distributions]: JSON.stringify(distributions) }, signal, log);
    const info = await docker.getImage(id).inspect();
    log.info(
      `data image ${plan.tag} built by the ${plan.route} route in ${((Date.now() - started) / 1000).toFixed(1)} s: ${(info.Size / 1e9).toFixed(2)} GB, ` +
        `${distributions.length} Python distributions (${distributions.filter((d) => d.requested).map((d) => `${d.name} ${d.version}`).join(', ')})`,
    );
    if (previous && previous !== id) {
      await docker
        .getImage(previous)
        .remove()
        .then(() => log.info(`removed the data image ${previous.slice(7, 19)} that the rebuild replaced`))
        .catch((e: unknown) => log.warn(`could not remove the replaced data image ${previous.slice(7, 19)}: ${describeError(e)}`));
    }
    return { tag: plan.tag, id, route: plan.route, recipeHash: plan.hash, built: true, distributions };
  } finally {
    // Only untags it when the final image was made from it; removes the image when not.
    await docker.getImage(staging).remove().catch(() => {});
  }
}

function stopError(why: StopReason, hints: ImageHints, timeoutMs: number): ImageBuildError {
  if (why === 'timeout') {
    const within = duration(timeoutMs);
    return new ImageBuildError(
      'build_failed',
      `The sandbox image build did not finish within ${within} and was stopped, so the program was not run. Ask the user to look at the build log in ${hints.log} and to start the build again with ${hints.prepare}.`,
      `Building the sandbox image took longer than ${within} and was stopped. The build log is in ${hints.log}; run ${hints.prepare} to try again.`,
    );
  }
  return new ImageBuildError(
    'cancelled',
    `The sandbox image build was cancelled, so the program was not run. Ask the user to start it again with ${hints.prepare}.`,
    `Building the sandbox image was cancelled. Run ${hints.prepare} to build it.`,
  );
}

function noImage(attempts: Attempt[], plans: RoutePlan[], hints: ImageHints): ImageBuildError {
  const bases = plans.map((p) => p.base);
  const cause = new Error(attempts.map((a) => `${a.route} route: ${a.reason}`).join('; '));
  if (attempts.every((a) => !a.started)) {
    const noRegistry = attempts.every((a) => a.reason.endsWith('no image registry answered'));
    const what = `${bases.length > 1 ? `none of its base images (${bases.join(', ')}) is` : `its base image ${bases[0]} is not`} on this Docker engine and ${noRegistry ? 'no image registry answered' : 'none could be pulled'}`;
    return new ImageBuildError(
      'image_unavailable',
      `The sandbox image could not be built, so the program was not run: ${what}. Ask the user to make one of them available, or to set ${hints.imageSetting} to an image that has python3.`,
      `The sandbox image cannot be built: ${what}. Load one of them into the engine (docker pull where a registry is reachable, or docker load of a saved copy), or set ${hints.imageSetting} to an image you have.`,
      { cause },
    );
  }
  return new ImageBuildError(
    'build_failed',
    `The sandbox image could not be built, so the program was not run; the build log is in ${hints.log}. Ask the user to look at it, or to set ${hints.imageSetting} to an image that has python3.`,
    `Building the sandbox image failed (${attempts.map((a) => `${a.route} route: ${a.reason}`).join('; ')}). The build log is in ${hints.log}.`,
    { cause },
  );
}

/** "30 minutes", "90 seconds": a deadline as the sentences say it. */
export function duration(ms: number): string {
  return ms >= 120_000 ? `${Math.round(ms / 60_000)} minutes` : `${Math.round(ms / 1000)} seconds`;
}
