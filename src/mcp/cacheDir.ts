import * as os from 'node:os';
import * as path from 'node:path';

/** The user's cache folder, by each platform's convention. */
export function userCacheDir(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  if (platform === 'win32') return env.LOCALAPPDATA || path.join(os.homedir(), 'AppData', 'Local');
  if (platform === 'darwin') return path.join(os.homedir(), 'Library', 'Caches');
  // The XDG specification says a relative value is to be ignored.
  const xdg = env.XDG_CACHE_HOME;
  return xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), '.cache');
}

/** Where the MCP server keeps runs and produced files unless --artifacts says otherwise. */
export function defaultArtifactsDir(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  return path.join(userCacheDir(env, platform), 'codeact-sandbox', 'runs');
}
