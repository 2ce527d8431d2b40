// Proves the bundles load outside the source tree: the CLI prints its usage, its commands load, and the extension
// module resolves every import (with a stub `vscode`, since only the host provides the real one).
import { execFileSync } from 'node:child_process';
import Module from 'node:module';
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';

const usage = execFileSync(process.execPath, ['dist/cli.js', '--help'], { encoding: 'utf8' });
assert.match(usage, /codeact-sandbox run \[options\] PROGRAM\.py/);

// The Dev Containers CLI copied next to the bundle runs on its own (no node_modules).
const dcVersion = execFileSync(process.execPath, ['dist/devcontainers-cli/dist/spec-node/devContainersSpecCLI.js', '--version'], { encoding: 'utf8' }).trim();
assert.match(dcVersion, /^\d+\.\d+\.\d+$/);

const require = createRequire(import.meta.url);
// The commands, which dist/cli.js loads only once one runs, resolve every import too, and so does
// each chunk a command loads only when it needs it (the MCP server, the export, ssh2, BuildKit).
assert.equal(typeof (await import('../dist/cli-commands.mjs')).runCommand, 'function');
for (const chunk of fs.readdirSync('dist/cli-chunks').filter((f) => f.endsWith('.mjs'))) await import(`../dist/cli-chunks/${chunk}`);

// The light door a run on a kept session loads first (src/docker/ahead.ts) must stay light: it asks
// for the lock while the rest loads, and is worth nothing if it loads the rest itself. It reads
// ~11 kB; dockerode and what it needs are ~150 kB, zod alone ~450 kB.
assert.equal(typeof (await import('../dist/cli-ahead.mjs')).lockCliSessionAhead, 'function');
const aheadBytes = staticImportBytes('dist/cli-ahead.mjs');
assert.ok(aheadBytes < 50_000, `dist/cli-ahead.mjs loads ${aheadBytes} bytes: src/docker/ahead.ts now imports something heavy`);

/** Bytes of `file` and of every file it imports statically, each once. */
function staticImportBytes(file, seen = new Set()) {
  if (seen.has(file)) return 0;
  seen.add(file);
  const text = fs.readFileSync(file, 'utf8');
  let bytes = Buffer.byteLength(text);
  for (const [, spec] of text.matchAll(/(?:^|[;}\s])import\s*(?:[^'"()]*?from\s*)?["'](\.[^"']+)["']/g)) {
    bytes += staticImportBytes(new URL(spec, new URL(file, `file://${process.cwd()}/`)).pathname.slice(process.cwd().length + 1), seen);
  }
  return bytes;
}

const originalLoad = Module._load;
Module._load = function (request, ...rest) {
  if (request === 'vscode') return {};
  return originalLoad.call(this, request, ...rest);
};
const ext = require('../dist/extension.js');
Module._load = originalLoad;
assert.equal(typeof ext.activate, 'function');
assert.equal(typeof ext.deactivate, 'function');
console.log(`bundle smoke test passed: dist/cli.js and dist/extension.js load, the Dev Containers CLI ${dcVersion} runs`);
