#!/usr/bin/env node
// Runs the host suites (tool calls through vscode.lm.invokeTool, and VS Code's real agent mode)
// in a real extension host, then checks from outside that the closed window left no sandbox.
//   node test/host/runHostTests.mjs [--electron]
// --electron uses @vscode/test-electron (downloads VS Code; for machines that can), otherwise
// the offline code-server runner in test/host/runner.
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const image = process.env.CODEACT_TEST_IMAGE || 'codeact-sandbox/python:bookworm';
const electron = process.argv.includes('--electron');
const artifacts = path.join(root, 'test-results', 'host');
fs.mkdirSync(artifacts, { recursive: true });
const settingsFile = path.join(artifacts, 'settings.json');
fs.writeFileSync(
  settingsFile,
  // No spare sandbox by default here: the suites count the window's containers call by call; the
  // spare sandbox has a test of its own that turns it on.
  // The plain tool by default: the suites call `execute_code` by that name; the card suite turns
  // the chat's run card on (its tool has the MCP server's name).
  JSON.stringify({ 'codeactSandbox.image': image, 'codeactSandbox.spareSandboxes': 0, 'codeactSandbox.runCard': false }, null, 2),
);

// The network suite's servers (test/host/internet.ts): on a Docker network of their own, under
// names only the proxy of a window started with CODEACT_SANDBOX_TEST_INTERNET resolves.
const internetFile = path.join(artifacts, 'internet.json');
const tsx = path.join(root, 'node_modules', '.bin', 'tsx');
execFileSync(tsx, [path.join(root, 'test/host/internet.ts'), 'start', internetFile], { stdio: 'inherit' });

// The runner loads the folder holding the tests as the extension under development and installs
// the others (the scripted model) into the run's private extensions folder.
const exts = [path.join(root, 'test/host/fixtures/scripted-model'), root];
const common = ['--tests', path.join(root, 'test/host/suite/index.js'), '--workspace', path.join(root, 'test/host/workspace')];
const args = electron
  ? [path.join(root, 'test/host/runner/electron.mjs'), ...exts.flatMap((e) => ['--ext', e]), ...common]
  : [
      path.join(root, 'test/host/runner/run.mjs'),
      ...exts.flatMap((e) => ['--ext', e]),
      ...common,
      '--settings', settingsFile,
      '--seed-storage', path.join(root, 'test/host/fixtures/seed-storage.json'),
      '--artifacts', artifacts,
      '--timeout', '600',
    ];
// As root, the window runs without the capability to override file permissions, as a person's
// window runs: a socket that refuses its user then refuses it too (the engine suite's "permission
// denied" state). Everything it uses is root's own, so nothing else changes.
const dropDac = process.getuid?.() === 0 && commandExists('setpriv');
const [command, commandArgs] = dropDac
  ? ['setpriv', ['--inh-caps=-dac_override,-dac_read_search', '--bounding-set=-dac_override,-dac_read_search', '--', process.execPath, ...args]]
  : [process.execPath, args];
const result = spawnSync(command, commandArgs, {
  stdio: 'inherit',
  env: { ...process.env, CODEACT_TEST_IMAGE: image, CODEACT_SANDBOX_TEST_INTERNET: internetFile, ...(dropDac ? { CODEACT_HOST_NO_DAC_OVERRIDE: '1' } : {}) },
});
let code = result.status ?? 3;
execFileSync(tsx, [path.join(root, 'test/host/internet.ts'), 'stop', internetFile], { stdio: 'inherit' });

// A second window in Restricted Mode, whose workspace settings try to choose image and engine.
if (!electron) {
  const untrusted = spawnSync(
    process.execPath,
    [
      path.join(root, 'test/host/runner/run.mjs'),
      '--ext', root,
      '--tests', path.join(root, 'test/host/suite/index.js'),
      '--workspace', path.join(root, 'test/host/untrusted-workspace'),
      '--settings', settingsFile,
      '--artifacts', artifacts,
      '--timeout', '300',
      '--untrusted',
    ],
    { stdio: 'inherit', env: { ...process.env, CODEACT_TEST_IMAGE: image, CODEACT_HOST_SUITE: 'untrusted' } },
  );
  code = code || (untrusted.status ?? 3);
}

// The window is gone now: no sandbox of a dead VS Code process may be left on the engine.
const rows = execFileSync('docker', ['ps', '-a', '--filter', 'label=dev.codeact-sandbox.owner-kind=vscode',
  '--format', '{{.ID}} {{.Label "dev.codeact-sandbox.owner-pid"}}'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
const alive = (pid) => { try { process.kill(Number(pid), 0); return true; } catch (e) { return e.code === 'EPERM'; } };
const left = rows.filter((r) => !alive(r.split(' ')[1]));
if (left.length > 0) {
  console.error(`host tests left ${left.length} sandbox container(s) behind: ${left.join(', ')}`);
  code = code || 1;
} else {
  console.log('no sandbox container left behind by the closed window');
}
process.exit(code);

function commandExists(name) {
  return spawnSync('sh', ['-c', 'command -v "$1"', 'sh', name], { stdio: 'ignore' }).status === 0;
}
