/**
 * The Dev Container backend's image: built from the workspace's Dev Container configuration by
 * the Dev Containers CLI (the spec's reference implementation), cached under a tag derived from
 * a hash of the configuration's inputs, and rebuilt only when they change.
 *
 * The sandbox started from the image is hardened exactly like any other (DockerSandbox does not
 * care where its image came from): no network, no mounts, uid 65534, our own PID 1.
 */
import type Dockerode from 'dockerode';
import { ToolError, describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { dockerCliEnv, engineOf, engineUnreachable, isUnreachable, resolveEngine, type EngineTarget } from '../engine';
import { checkDockerCli, devcontainerBuildCommand, runDevcontainerBuild } from './buildCommand';
import { buildFailed, cancelled, tagFailed } from './buildErrors';
import { locateDevcontainerCli } from './cliLocation';
import { inspectConfig, type DevcontainerConfigInfo } from './configuration';
import { devcontainerImageTag, imagePresent, labelImage, pruneDevcontainerImages, removeBuildLeftovers, removeImage, stagingImageTag } from './images';
import { nodeProcessHost, type ProcessHost } from './processHost';

export const DEFAULT_BUILD_TIMEOUT_MS = 15 * 60_000;

export interface DevcontainerPlan extends DevcontainerConfigInfo {
  tag: string;
  /** The tag is already on the engine: no build needed. */
  present: boolean;
}

/**
 * What ensureDevcontainerImage would do, without doing it: lets the caller ask the user before a
 * first build or show a progress notification only when a build is needed. Throws
 * ToolError('invalid_settings') when the workspace has no configuration.
 */
export async function planDevcontainerImage(docker: Dockerode, workspaceFolder: string): Promise<DevcontainerPlan> {
  const info = await inspectConfig(workspaceFolder);
  if (!info) {
    throw new ToolError(
      'invalid_settings',
      'The sandbox is set to use the workspace\'s Dev Container, but the workspace has no .devcontainer/devcontainer.json (or .devcontainer.json). Ask the user to add one, or to switch the sandbox backend to docker or auto.',
    );
  }
  const tag = devcontainerImageTag(workspaceFolder, info.hash);
  return { ...info, tag, present: await imagePresent(docker, tag) };
}

export interface EnsureDevcontainerOptions {
  docker: Dockerode;
  workspaceFolder: string;
  /** Build output goes here line by line (info), decisions too. */
  log: Logger;
  /** Cancels a running build: the CLI's whole process group is killed. */
  signal?: AbortSignal;
  /** Short human progress ("Step 3/7 : RUN apt-get ..."). */
  onProgress?: (message: string) => void;
  /**
   * Called when a build is needed, before it starts (not when the cached image is used). Throw
   * (e.g. a ToolError 'cancelled' when the user declines the first build) to stop it.
   */
  beforeBuild?: (plan: DevcontainerPlan) => Promise<void>;
  /** Build even when the tag exists (the "rebuild" command). */
  force?: boolean;
  /** Also pass --no-cache to the build. */
  noCache?: boolean;
  /** Default 15 minutes. */
  timeoutMs?: number;
  /** The engine the CLI's docker commands talk to; default: the one `docker` was created for. */
  engine?: EngineTarget;
  /** The docker CLI the Dev Containers CLI runs (default "docker" on PATH). */
  dockerPath?: string;
  /** The Dev Containers CLI's script; default: locateDevcontainerCli(). */
  cliScript?: string;
  /** Extra labels on the image (tests mark theirs). */
  labels?: Record<string, string>;
  /** How a model-facing error names the place with the build log. */
  logHint?: string;
  /** Runs the Dev Containers CLI and the docker check; default: child processes on this machine. */
  processHost?: ProcessHost;
}

export interface DevcontainerImage {
  image: string;
  /** True when this call built it; false when the cached image was used. */
  built: boolean;
  /** Workspace-relative configuration file, for status displays. */
  configFile: string;
}

const inflight = new WeakMap<Dockerode, Map<string, Promise<DevcontainerImage>>>();

/**
 * The image for the workspace's Dev Container: the cached one when the configuration is
 * unchanged, else built with `devcontainer build` through the given engine. Concurrent calls
 * for the same image share one build.
 */
export async function ensureDevcontainerImage(options: EnsureDevcontainerOptions): Promise<DevcontainerImage> {
  const { docker, log } = options;
  const plan = await planDevcontainerImage(docker, options.workspaceFolder);
  if (plan.present && !options.force) {
    log.debug(`Dev Container image ${plan.tag} is up to date with ${plan.relativeConfigFile}`);
    return { image: plan.tag, built: false, configFile: plan.relativeConfigFile };
  }
  let perEngine = inflight.get(docker);
  if (!perEngine) inflight.set(docker, (perEngine = new Map()));
  const running = perEngine.get(plan.tag);
  if (running) return running;
  const build = (async () => {
    await options.beforeBuild?.(plan);
    await buildImage(options, plan);
    return { image: plan.tag, built: true, configFile: plan.relativeConfigFile };
  })().finally(() => perEngine.delete(plan.tag));
  perEngine.set(plan.tag, build);
  return build;
}

async function buildImage(options: EnsureDevcontainerOptions, plan: DevcontainerPlan): Promise<void> {
  const { docker, log, signal } = options;
  const host = options.processHost ?? nodeProcessHost;
  const engine = options.engine ?? engineOf(docker) ?? resolveEngine();
  const logHint = options.logHint ?? 'the CodeAct Sandbox output channel';
  const timeoutMs = options.timeoutMs ?? DEFAULT_BUILD_TIMEOUT_MS;
  const dockerPath = options.dockerPath ?? 'docker';
  if (signal?.aborted) throw cancelled();
  const script = options.cliScript ?? locateDevcontainerCli();
  const env = dockerCliEnv(engine);
  await checkDockerCli(host, dockerPath, env, signal);

  const staging = stagingImageTag(options.workspaceFolder, plan.hash);
  const command = devcontainerBuildCommand({
    node: process.execPath,
    script,
    workspaceFolder: options.workspaceFolder,
    configFile: plan.configFile,
    imageName: staging,
    dockerPath,
    noCache: options.noCache ?? false,
    env,
  });
  log.info(`building the Dev Container image ${plan.tag} from ${plan.relativeConfigFile} on ${engine.description}`);
  const started = Date.now();
  const result = await runDevcontainerBuild(host, command, { log, signal, timeoutMs, onProgress: options.onProgress });
  if (result.outcome !== 'success') {
    await removeImage(docker, staging, log);
    await removeBuildLeftovers(docker, started, log);
    if (result.outcome === 'cancelled') throw cancelled();
    log.error(`Dev Container build of ${plan.relativeConfigFile} failed (${result.outcome}${result.detail ? `: ${result.detail}` : ''})`);
    throw buildFailed(result, { relativeConfigFile: plan.relativeConfigFile, timeoutMs, logHint });
  }

  try {
    await labelImage(docker, staging, plan, options.workspaceFolder, options.labels ?? {});
  } catch (e) {
    await removeImage(docker, staging, log);
    if (isUnreachable(e)) throw engineUnreachable(e, engine);
    throw tagFailed(e, logHint);
  }
  await removeImage(docker, staging, log);
  log.info(`Dev Container image ${plan.tag} built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  await pruneDevcontainerImages(docker, log, { workspaceFolder: options.workspaceFolder, keep: [plan.tag] }).catch((e: unknown) =>
    log.warn(`could not prune old Dev Container images: ${describeError(e)}`),
  );
}
