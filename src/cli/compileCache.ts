import * as fs from 'node:fs';
import * as nodeModule from 'node:module';
import * as path from 'node:path';
import { userCacheDir } from '../mcp/cacheDir';

/** What `node:module` offers from Node 22.1 on (absent before). */
export interface CompileCacheHost {
  enableCompileCache?: (directory?: string) => { status: number };
  constants?: { compileCacheStatus?: { ENABLED: number; ALREADY_ENABLED: number } };
}

/** Where the command line keeps V8's compiled code of its bundles: the user's own cache folder. */
export function compileCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(userCacheDir(env), 'codeact-sandbox', 'node-compile-cache');
}

/**
 * Keeps V8's compiled code of the command bundles between runs, where Node can (22.1 and later):
 * compiling the ~1 MB a `run` reads is a tenth of a warm run on a kept session (Node 24 on a
 * 2-vCPU virtual machine, medians of 12 interleaved runs: runc 187 ms without, 175 ms with; gVisor
 * 249 ms, 225 ms). The folder is the user's, made 0700 first: Node's own default is a shared
 * folder in the system's temporary directory, where another user could leave code for this one to
 * run. Returns whether the cache is on; never throws (a folder that cannot be made leaves the
 * command as fast as it was).
 */
export function enableCompileCache(dir: string = compileCacheDir(), host: CompileCacheHost = nodeModule as CompileCacheHost): boolean {
  if (typeof host.enableCompileCache !== 'function') return false;
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const { status } = host.enableCompileCache(dir);
    const known = host.constants?.compileCacheStatus;
    // FAILED (a folder Node cannot write) and DISABLED (NODE_DISABLE_COMPILE_CACHE) run as before.
    return status === known?.ENABLED || status === known?.ALREADY_ENABLED;
  } catch {
    return false;
  }
}
