/**
 * The Dev Container backend's image: built from the workspace's Dev Container configuration by
 * the Dev Containers CLI (the spec's reference implementation), cached under a tag derived from
 * a hash of the configuration's inputs, and rebuilt only when they change.
 *
 * We read devcontainer.json only to know which files to hash; the build itself is the CLI's job.
 * The sandbox started from the image is hardened exactly like any other (DockerSandbox does not
 * care where its image came from): no network, no mounts, uid 65534, our own PID 1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type Dockerode from 'dockerode';
import { ToolError, describeError } from '../core/errors';
import type { Logger } from '../core/logger';
import { archiveOf } from './archive';
import { dockerCliEnv, engineOf, resolveEngine, type EngineTarget } from './connection';
import { engineUnreachable, isUnreachable, statusCode } from './engineErrors';
import { LABEL, LABEL_SCHEMA } from './labels';

/** Repository of every image this module builds: codeact-devcontainer/<folder digest>:<config hash>. */
export const DEVCONTAINER_REPOSITORY = 'codeact-devcontainer';

export const DEVCONTAINER_LABEL = {
  /** Digest of the host name and workspace folder the image was built for. */
  folder: 'dev.codeact-sandbox.devcontainer.folder',
  /** The configuration hash (also the tag). */
  config: 'dev.codeact-sandbox.devcontainer.config',
} as const;

/** Bump to rebuild every cached image (e.g. when what goes into the hash changes). */
const HASH_SCHEMA = 'codeact-devcontainer-hash 1';
export const DEFAULT_BUILD_TIMEOUT_MS = 15 * 60_000;
/** Hash file contents up to this many bytes in total; past it, size and mtime stand in for content. */
const HASH_CONTENT_BUDGET = 256 * 1024 * 1024;
/** At most this many files from the build context take part (a COPY . . of a huge workspace). */
const HASH_MAX_FILES = 20_000;
/** Lines of build output kept for the error's cause (the full output goes to the log). */
const LOG_TAIL_LINES = 60;

/** Where a workspace keeps its Dev Container configuration, in the order the spec looks. */
const CONFIG_CANDIDATES = ['.devcontainer/devcontainer.json', '.devcontainer.json'];

export interface DevcontainerConfigInfo {
  /** Absolute path of devcontainer.json. */
  configFile: string;
  /** The same, workspace-relative with '/' (safe to show the model: ".devcontainer/devcontainer.json"). */
  relativeConfigFile: string;
  kind: 'dockerfile' | 'image';
  /** Absolute paths of every file whose content went into the hash, sorted; devcontainer.json first. */
  inputs: string[];
  /** sha256 hex of the inputs. */
  hash: string;
}

/** The configuration file of `workspaceFolder`, or undefined when it has none. */
export async function findDevcontainerConfig(workspaceFolder: string): Promise<string | undefined> {
  for (const rel of CONFIG_CANDIDATES) {
    const file = path.join(workspaceFolder, rel);
    try {
      if ((await fs.promises.stat(file)).isFile()) return file;
    } catch {
      // next candidate
    }
  }
  return undefined;
}

/**
 * The files that define the image: devcontainer.json, the Dockerfile it names, the build-context
 * inputs that Dockerfile's COPY/ADD name, .dockerignore files and local Features. Undefined when
 * the workspace has no Dev Container configuration.
 */
export async function configFiles(workspaceFolder: string): Promise<string[] | undefined> {
  return (await inspectConfig(workspaceFolder))?.inputs;
}

/** sha256 (hex) over the configuration's inputs; undefined when there is no configuration. */
export async function configHash(workspaceFolder: string): Promise<string | undefined> {
  return (await inspectConfig(workspaceFolder))?.hash;
}

/** Reads and hashes the configuration. Throws ToolError('invalid_settings') for a Compose-based one. */
export async function inspectConfig(workspaceFolder: string): Promise<DevcontainerConfigInfo | undefined> {
  const root = path.resolve(workspaceFolder);
  const configFile = await findDevcontainerConfig(root);
  if (!configFile) return undefined;
  const relativeConfigFile = path.relative(root, configFile).split(path.sep).join('/');
  const configDir = path.dirname(configFile);
  const text = await fs.promises.readFile(configFile, 'utf8');
  const json = parseJsonc(text);
  const inputs = new Set<string>([configFile]);
  let kind: DevcontainerConfigInfo['kind'] = 'image';

  if (json && typeof json === 'object') {
    const config = json as Record<string, unknown>;
    if (config.dockerComposeFile !== undefined) {
      throw new ToolError(
        'invalid_settings',
        `The workspace's Dev Container configuration (${relativeConfigFile}) uses Docker Compose, which the sandbox does not support: it needs a Dockerfile- or image-based configuration. Ask the user to switch the sandbox backend to docker, or to add a Dockerfile-based configuration.`,
      );
    }
    const build = (typeof config.build === 'object' && config.build !== null ? config.build : {}) as Record<string, unknown>;
    const dockerfileName = typeof build.dockerfile === 'string' ? build.dockerfile : typeof config.dockerFile === 'string' ? config.dockerFile : undefined;
    if (dockerfileName !== undefined) {
      kind = 'dockerfile';
      const dockerfile = path.resolve(configDir, dockerfileName);
      const context = path.resolve(configDir, typeof build.context === 'string' ? build.context : typeof config.context === 'string' ? config.context : '.');
      inputs.add(dockerfile);
      for (const ignore of [path.join(context, '.dockerignore'), `${dockerfile}.dockerignore`]) {
        if (await isFile(ignore)) inputs.add(ignore);
      }
      const dockerfileText = await fs.promises.readFile(dockerfile, 'utf8').catch(() => undefined);
      if (dockerfileText !== undefined) {
        for (const f of await contextInputs(context, copySources(dockerfileText))) inputs.add(f);
      }
    }
    // Local Features ("./my-feature" next to devcontainer.json) are folders whose content builds into the image.
    const features = typeof config.features === 'object' && config.features !== null ? Object.keys(config.features) : [];
    for (const id of features) {
      if (id.startsWith('./') || id.startsWith('../')) {
        for (const f of await walk(path.resolve(configDir, id), HASH_MAX_FILES)) inputs.add(f);
      }
    }
  }

  const files = [configFile, ...[...inputs].filter((f) => f !== configFile).sort()];
  const hash = createHash('sha256').update(`${HASH_SCHEMA}\n`);
  let budget = HASH_CONTENT_BUDGET;
  for (const file of files) {
    const rel = path.relative(root, file).split(path.sep).join('/');
    let digest: string;
    try {
      const stat = await fs.promises.stat(file);
      if (stat.size <= budget) {
        budget -= stat.size;
        digest = createHash('sha256').update(await fs.promises.readFile(file)).digest('hex');
      } else {
        digest = `size=${stat.size} mtime=${stat.mtimeMs}`;
      }
    } catch {
      digest = 'missing';
    }
    hash.update(`${rel}\0${digest}\n`);
  }
  return { configFile, relativeConfigFile, kind, inputs: files, hash: hash.digest('hex') };
}

/** codeact-devcontainer/<12 hex of host + folder>:<16 hex of the configuration hash>. */
export function devcontainerImageTag(workspaceFolder: string, hash: string): string {
  return `${DEVCONTAINER_REPOSITORY}/${folderDigest(workspaceFolder)}:${hash.slice(0, 16)}`;
}

export function folderDigest(workspaceFolder: string): string {
  return createHash('sha256').update(`${os.hostname()}\0${path.resolve(workspaceFolder)}`).digest('hex').slice(0, 12);
}

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

/**
 * Removes this module's images that are no longer wanted: those of `workspaceFolder` (default:
 * all folders of this host) whose tag is not in `keep`. Images still used by a container are left.
 */
export async function pruneDevcontainerImages(docker: Dockerode, log: Logger, options: { workspaceFolder?: string; keep?: string[] } = {}): Promise<number> {
  const label = [`${LABEL.managed}`, ...(options.workspaceFolder ? [`${DEVCONTAINER_LABEL.folder}=${folderDigest(options.workspaceFolder)}`] : [DEVCONTAINER_LABEL.folder])];
  const images = await docker.listImages({ all: false, filters: { label } });
  const keep = new Set(options.keep ?? []);
  let removed = 0;
  for (const image of images) {
    const tags = (image.RepoTags ?? []).filter((t) => t !== '<none>:<none>');
    if (tags.some((t) => keep.has(t))) continue;
    try {
      await docker.getImage(image.Id).remove({ noprune: false });
      removed++;
      log.info(`removed the outdated Dev Container image ${tags.join(', ') || image.Id}`);
    } catch (e) {
      // 409: a sandbox still runs from it; the next prune gets it.
      if (statusCode(e) !== 409) log.warn(`could not remove Dev Container image ${tags.join(', ') || image.Id}: ${describeError(e)}`);
    }
  }
  return removed;
}

/**
 * Where the Dev Containers CLI is. The extension's bundle carries a copy of the CLI's own
 * prebuilt single-file bundle next to itself (dist/devcontainers-cli/, put there by esbuild.mjs);
 * from source (tests, tsx) the npm package is used.
 */
export function locateDevcontainerCli(): string {
  const candidates = [
    process.env.CODEACT_DEVCONTAINER_CLI,
    path.join(__dirname, 'devcontainers-cli', 'dist', 'spec-node', 'devContainersSpecCLI.js'),
  ];
  for (const c of candidates) if (c && fs.existsSync(c)) return c;
  try {
    const pkgFile = require.resolve('@devcontainers/cli/package.json');
    const pkg = JSON.parse(fs.readFileSync(pkgFile, 'utf8')) as { bin?: string | Record<string, string> };
    const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin?.devcontainer;
    if (bin) {
      const script = path.join(path.dirname(pkgFile), bin);
      if (fs.existsSync(script)) return script;
    }
  } catch {
    // not installed
  }
  throw new ToolError(
    'build_failed',
    'The Dev Container image could not be built because the Dev Containers CLI is missing from this installation of CodeAct Sandbox. Ask the user to reinstall the extension, or to switch the sandbox backend to docker.',
  );
}

async function buildImage(options: EnsureDevcontainerOptions, plan: DevcontainerPlan): Promise<void> {
  const { docker, log, signal } = options;
  const engine = options.engine ?? engineOf(docker) ?? resolveEngine();
  const logHint = options.logHint ?? 'the CodeAct Sandbox output channel';
  const timeoutMs = options.timeoutMs ?? DEFAULT_BUILD_TIMEOUT_MS;
  const dockerPath = options.dockerPath ?? 'docker';
  if (signal?.aborted) throw cancelled();
  const script = options.cliScript ?? locateDevcontainerCli();
  const env = { ...dockerCliEnv(engine), ELECTRON_RUN_AS_NODE: '1' };
  await checkDockerCli(dockerPath, env, signal);

  // Built under a temporary tag, then labelled into the final one: the CLI's own --label does not
  // reach every build path, and the final tag appears only once everything succeeded.
  const staging = `${DEVCONTAINER_REPOSITORY}/${folderDigest(options.workspaceFolder)}:build-${plan.hash.slice(0, 16)}`;
  const args = [
    script,
    'build',
    '--workspace-folder', path.resolve(options.workspaceFolder),
    '--config', plan.configFile,
    '--image-name', staging,
    '--docker-path', dockerPath,
    // Never write a lockfile into the user's workspace.
    '--no-lockfile',
    '--log-format', 'text',
    ...(options.noCache ? ['--no-cache'] : []),
  ];
  log.info(`building the Dev Container image ${plan.tag} from ${plan.relativeConfigFile} on ${engine.description}`);
  const started = Date.now();
  const result = await runCli(process.execPath, args, env, { log, signal, timeoutMs, onProgress: options.onProgress });
  if (result.outcome !== 'success') {
    await docker.getImage(staging).remove().catch(() => {});
    await removeBuildLeftovers(docker, started, log);
    if (result.outcome === 'cancelled') throw cancelled();
    log.error(`Dev Container build of ${plan.relativeConfigFile} failed (${result.outcome}${result.detail ? `: ${result.detail}` : ''})`);
    const tail = result.tail.join('\n');
    const cause = new Error(`devcontainer build ${result.outcome}${result.detail ? `: ${result.detail}` : ''}\n${tail}`);
    if (result.outcome === 'timeout') {
      throw new ToolError(
        'build_failed',
        `The Dev Container image build did not finish within ${Math.round(timeoutMs / 60_000)} minutes and was stopped, so the program was not run; the build log is in ${logHint}. Ask the user to check ${plan.relativeConfigFile} and its Dockerfile, or to switch the sandbox backend to docker.`,
        { cause },
      );
    }
    const network = /ENOTFOUND|EAI_AGAIN|getaddrinfo|ECONNREFUSED|ETIMEDOUT|network is unreachable|no such host|dial tcp|TLS handshake timeout|failed to (fetch|resolve|download)|pull access denied|manifest unknown|Temporary failure resolving|Could not resolve/i.test(
      `${result.detail ?? ''}\n${tail}`,
    );
    throw new ToolError(
      'build_failed',
      `The Dev Container image could not be built, so the program was not run; the build log is in ${logHint}.${
        network ? ' The build needed network access (a base image, a Dev Container Feature or a package download) and could not get it.' : ''
      } Ask the user to fix ${plan.relativeConfigFile} (or its Dockerfile) and rebuild, or to switch the sandbox backend to docker.`,
      { cause },
    );
  }

  try {
    await labelImage(docker, staging, plan, options.workspaceFolder, options.labels ?? {});
  } catch (e) {
    await docker.getImage(staging).remove().catch(() => {});
    if (isUnreachable(e)) throw engineUnreachable(e, engine);
    throw new ToolError('build_failed', `The Dev Container image was built but could not be tagged, so the program was not run; details are in ${logHint}.`, {
      cause: e,
    });
  }
  await docker.getImage(staging).remove().catch((e: unknown) => log.warn(`could not remove the staging tag ${staging}: ${describeError(e)}`));
  log.info(`Dev Container image ${plan.tag} built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  await pruneDevcontainerImages(docker, log, { workspaceFolder: options.workspaceFolder, keep: [plan.tag] }).catch((e: unknown) =>
    log.warn(`could not prune old Dev Container images: ${describeError(e)}`),
  );
}

/**
 * The legacy builder keeps the container of a failed RUN step (docker build --rm removes only
 * those of successful steps, and the Dev Containers CLI does not pass --force-rm). Remove the
 * ones this build left: stopped, created since it started, from a bare image id, not ours.
 */
async function removeBuildLeftovers(docker: Dockerode, sinceMs: number, log: Logger): Promise<void> {
  try {
    const since = Math.floor(sinceMs / 1000) - 1;
    const containers = await docker.listContainers({ all: true, filters: { status: ['created', 'exited'] } });
    for (const c of containers) {
      if (c.Created < since || !/^sha256:[0-9a-f]{64}$/.test(c.Image) || c.Labels?.[LABEL.managed] !== undefined) continue;
      await docker.getContainer(c.Id).remove({ force: true, v: true });
      log.info(`removed the container of the failed build step ${c.Id.slice(0, 12)}`);
    }
  } catch (e) {
    log.warn(`could not remove the failed build's containers: ${describeError(e)}`);
  }
}

/** FROM staging + our labels, through the engine's API (a tar in, nothing on the host's disk). */
async function labelImage(docker: Dockerode, staging: string, plan: DevcontainerPlan, workspaceFolder: string, extra: Record<string, string>): Promise<void> {
  const labels = {
    [LABEL.managed]: LABEL_SCHEMA,
    [DEVCONTAINER_LABEL.folder]: folderDigest(workspaceFolder),
    [DEVCONTAINER_LABEL.config]: plan.hash,
    ...extra,
  };
  const context = archiveOf([{ type: 'file', name: 'Dockerfile', content: Buffer.from(`FROM ${staging}\n`), mode: 0o644 }]);
  const stream = (await docker.buildImage(context, { t: plan.tag, labels, rm: true, forcerm: true })) as NodeJS.ReadableStream;
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(stream, (err: Error | null, events: { error?: string }[]) => {
      const failed = events?.find((e) => e.error);
      if (err) reject(err);
      else if (failed) reject(new Error(failed.error));
      else resolve();
    });
  });
  await docker.getImage(plan.tag).inspect();
}

async function checkDockerCli(dockerPath: string, env: NodeJS.ProcessEnv, signal: AbortSignal | undefined): Promise<void> {
  const ok = await new Promise<boolean>((resolve) => {
    const child = spawn(dockerPath, ['--version'], { env, stdio: 'ignore', windowsHide: true, ...(signal ? { signal } : {}) });
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('error', () => {
      clearTimeout(timer);
      resolve(false);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code === 0);
    });
  });
  if (signal?.aborted) throw cancelled();
  if (!ok) {
    throw new ToolError(
      'build_failed',
      'The Dev Container image could not be built because the docker command-line tool was not found on the machine where the extension runs (the Dev Containers CLI needs it). Ask the user to install it or set the docker path setting, or to switch the sandbox backend to docker.',
    );
  }
}

interface CliResult {
  outcome: 'success' | 'error' | 'timeout' | 'cancelled';
  detail?: string;
  tail: string[];
}

/** Runs the CLI (argv, no shell) in its own process group, streaming its output to the log. */
function runCli(
  node: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  o: { log: Logger; signal: AbortSignal | undefined; timeoutMs: number; onProgress: ((m: string) => void) | undefined },
): Promise<CliResult> {
  return new Promise((resolve) => {
    const tail: string[] = [];
    let lastJson: { outcome?: string; message?: string; description?: string } | undefined;
    let ending: CliResult['outcome'] | undefined;
    let child: ChildProcess;
    try {
      child = spawn(node, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: process.platform !== 'win32', windowsHide: true });
    } catch (e) {
      resolve({ outcome: 'error', detail: describeError(e), tail });
      return;
    }
    const line = (text: string, fromStdout: boolean) => {
      const clean = text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').trimEnd();
      if (!clean) return;
      if (fromStdout && clean.startsWith('{')) {
        try {
          lastJson = JSON.parse(clean) as typeof lastJson;
          return;
        } catch {
          // an ordinary line
        }
      }
      o.log.info(`devcontainer build: ${clean}`);
      tail.push(clean);
      if (tail.length > LOG_TAIL_LINES) tail.shift();
      const step = /(Step \d+\/\d+ : .*|#\d+ \[.*)$/.exec(clean)?.[1];
      if (step) o.onProgress?.(step.slice(0, 120));
    };
    const reader = (fromStdout: boolean) => {
      let pending = '';
      return (chunk: Buffer) => {
        pending += chunk.toString('utf8');
        const lines = pending.split(/\r?\n|\r/);
        pending = lines.pop() ?? '';
        for (const l of lines) line(l, fromStdout);
      };
    };
    child.stdout!.on('data', reader(true));
    child.stderr!.on('data', reader(false));

    const stop = (why: CliResult['outcome']) => {
      if (ending) return;
      ending = why;
      o.log.warn(`stopping the Dev Container build (${why})`);
      killTree(child, 'SIGTERM');
      setTimeout(() => killTree(child, 'SIGKILL'), 5_000).unref();
    };
    const onAbort = () => stop('cancelled');
    o.signal?.addEventListener('abort', onAbort, { once: true });
    if (o.signal?.aborted) stop('cancelled');
    const timer = setTimeout(() => stop('timeout'), o.timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      resolve({ outcome: ending ?? 'error', detail: describeError(e), tail });
    });
    child.once('close', (code, sig) => {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      if (ending) return resolve({ outcome: ending, tail });
      if (code === 0 && lastJson?.outcome === 'success') return resolve({ outcome: 'success', tail });
      const detail = [lastJson?.message, lastJson?.description].filter(Boolean).join(': ') || `exit ${code ?? sig}`;
      if (lastJson?.message) {
        tail.push(detail);
        o.log.info(`devcontainer build: ${detail}`);
      }
      resolve({ outcome: 'error', detail, tail });
    });
  });
}

function killTree(child: ChildProcess, sig: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    if (process.platform === 'win32') spawn('taskkill', ['/pid', String(child.pid), '/T', '/F'], { stdio: 'ignore', windowsHide: true });
    else process.kill(-child.pid, sig);
  } catch {
    child.kill(sig);
  }
}

function cancelled(): ToolError {
  return new ToolError('cancelled', 'The Dev Container image build was cancelled, so the program was not run.');
}

async function imagePresent(docker: Dockerode, tag: string): Promise<boolean> {
  try {
    await docker.getImage(tag).inspect();
    return true;
  } catch (e) {
    if (isUnreachable(e)) throw engineUnreachable(e, engineOf(docker));
    if (statusCode(e) === 404) return false;
    throw e;
  }
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await fs.promises.stat(file)).isFile();
  } catch {
    return false;
  }
}

/**
 * JSON with comments and trailing commas, as devcontainer.json allows. Undefined when it is not
 * even that (the CLI will say what is wrong; we then hash the bytes alone).
 */
export function parseJsonc(text: string): unknown {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 2;
    } else {
      out += c;
      i++;
    }
  }
  // Trailing commas, outside strings: strings were copied verbatim, so match around them.
  const noTrailing = out.replace(/("(?:[^"\\]|\\.)*")|,(\s*[}\]])/g, (m, str: string | undefined, close: string | undefined) => str ?? close ?? m);
  try {
    return JSON.parse(noTrailing) as unknown;
  } catch {
    return undefined;
  }
}

/** Sources of COPY/ADD instructions that read the build context (not --from=, not URLs, not heredocs). */
export function copySources(dockerfile: string): string[] {
  const logical = dockerfile
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const sources: string[] = [];
  for (const l of logical) {
    const m = /^(COPY|ADD)\s+(.*)$/i.exec(l);
    if (!m) continue;
    let rest = m[2]!.trim();
    let fromStage = false;
    while (rest.startsWith('--')) {
      const flag = /^--(\S+)\s*/.exec(rest)!;
      if (/^from=/i.test(flag[1]!)) fromStage = true;
      rest = rest.slice(flag[0].length);
    }
    if (fromStage) continue;
    let parts: string[];
    if (rest.startsWith('[')) {
      try {
        parts = JSON.parse(rest) as string[];
      } catch {
        continue;
      }
    } else {
      parts = rest.split(/\s+/);
    }
    for (const src of parts.slice(0, -1)) {
      if (src.startsWith('<<') || /^[a-z]+:\/\//i.test(src) || src.startsWith('git@')) continue;
      sources.push(src);
    }
  }
  return sources;
}

/** Files of the build context that the sources name: files, folders (recursively) and globs. */
async function contextInputs(context: string, sources: string[]): Promise<string[]> {
  const out = new Set<string>();
  for (const src of sources) {
    if (out.size >= HASH_MAX_FILES) break;
    const rel = src.replace(/^\/+/, '');
    if (/[*?[]/.test(rel)) {
      const re = globRegExp(rel.replace(/^\.\//, ''));
      for (const f of await walk(context, HASH_MAX_FILES - out.size)) {
        const r = path.relative(context, f).split(path.sep).join('/');
        // A glob matches a file, or a folder whose files all come along.
        if (r.split('/').some((_, k, parts) => re.test(parts.slice(0, k + 1).join('/')))) out.add(f);
      }
      continue;
    }
    const abs = path.resolve(context, rel);
    // Never outside the context: the engine would refuse it anyway.
    if (abs !== context && !abs.startsWith(context + path.sep)) continue;
    for (const f of await walk(abs, HASH_MAX_FILES - out.size)) out.add(f);
  }
  return [...out];
}

/** Files under `p` (or `p` itself when it is a file), skipping symlinked folders; at most `max`. */
async function walk(p: string, max: number): Promise<string[]> {
  const out: string[] = [];
  const visit = async (current: string): Promise<void> => {
    if (out.length >= max) return;
    let stat: fs.Stats;
    try {
      stat = await fs.promises.lstat(current);
    } catch {
      return;
    }
    if (stat.isFile() || stat.isSymbolicLink()) {
      out.push(current);
      return;
    }
    if (!stat.isDirectory()) return;
    const entries = await fs.promises.readdir(current).catch(() => [] as string[]);
    for (const e of entries.sort()) await visit(path.join(current, e));
  };
  await visit(p);
  return out;
}

function globRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i);
      if (end < 0) re += '\\[';
      else {
        re += `[${glob.slice(i + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}
