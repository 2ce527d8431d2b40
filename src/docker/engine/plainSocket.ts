import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** The socket docker-modem would pick, made explicit so the docker CLI (Dev Container builds) talks to the same engine. */
export function defaultSocketPath(protocol: 'unix' | 'npipe', env: NodeJS.ProcessEnv = process.env): string {
  if (protocol === 'npipe') return '//./pipe/docker_engine';
  const user = path.join(env.HOME || os.homedir(), '.docker', 'run', 'docker.sock');
  return fs.existsSync(user) ? user : '/var/run/docker.sock';
}

/**
 * The engine's Unix socket when the environment alone says it: DOCKER_HOST unset or unix://,
 * DOCKER_CONTEXT unset or `default`, and (without DOCKER_HOST) no other current context in the
 * docker CLI's config.json. Undefined for anything else (a context, tcp://, ssh://, Windows), which
 * resolve.ts decides. A guess made before the rest of the engine code is loaded (no zod, no
 * contexts): whoever uses it checks it against resolveEngine's answer, and drops it when they differ.
 */
export function plainUnixSocket(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  readFile: (file: string) => string | undefined = readOrUndefined,
): string | undefined {
  if (platform === 'win32') return undefined;
  const context = env.DOCKER_CONTEXT?.trim();
  if (context && context !== 'default') return undefined;
  const host = env.DOCKER_HOST?.trim();
  if (host) return /^unix:\/\/(\/[^\0\n]*)$/i.exec(host)?.[1];
  if (context !== 'default') {
    const text = readFile(path.join(dockerConfigDir(env, env.HOME || env.USERPROFILE || os.homedir()), 'config.json'));
    if (text !== undefined) {
      let current: unknown;
      try {
        current = (JSON.parse(text) as { currentContext?: unknown } | null)?.currentContext;
      } catch {
        return undefined;
      }
      if (current !== undefined && (typeof current !== 'string' || (current.trim() !== '' && current.trim() !== 'default'))) return undefined;
    }
  }
  return defaultSocketPath('unix', env);
}

/** The docker CLI's configuration folder: DOCKER_CONFIG, else ~/.docker. */
export function dockerConfigDir(env: NodeJS.ProcessEnv, home: string): string {
  const dir = env.DOCKER_CONFIG?.trim();
  return dir ? dir : path.join(home, '.docker');
}

/** A file's text; undefined when it cannot be read. */
export function readOrUndefined(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
