/**
 * Which files define the workspace's Dev Container image, and a hash over them. We read
 * devcontainer.json only to know which files to hash; the build itself is the CLI's job.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ToolError } from '../../core/errors';
import { HASH_MAX_FILES, contextInputs, walk } from './contextFiles';
import { copySources } from './dockerfile';
import { parseJsonc } from './jsonc';

/** Bump to rebuild every cached image (e.g. when what goes into the hash changes). */
const HASH_SCHEMA = 'codeact-devcontainer-hash 1';
/** Hash file contents up to this many bytes in total; past it, size and mtime stand in for content. */
const HASH_CONTENT_BUDGET = 256 * 1024 * 1024;

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
    if (await isFile(file)) return file;
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
  const json = parseJsonc(await fs.promises.readFile(configFile, 'utf8'));
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
  return { configFile, relativeConfigFile, kind, inputs: files, hash: await hashFiles(root, files) };
}

async function hashFiles(root: string, files: string[]): Promise<string> {
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
  return hash.digest('hex');
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await fs.promises.stat(file)).isFile();
  } catch {
    return false;
  }
}
