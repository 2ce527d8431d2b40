#!/usr/bin/env node
// Runs an extension's integration tests inside a real VS Code extension host, offline:
// code-server (the VS Code server + web workbench) is started privately and its workbench is
// opened in headless Chromium with an "Extension Development Host" payload. The contract is
// the one of @vscode/test-electron: --tests names a module exporting run(): Promise<void>,
// which the extension host loads next to the extensions under development.
//
// See README.md in this folder for the options and how it works.
// Exit codes: 0 tests passed, 1 tests failed, 2 timeout, 3 harness error.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { format } from 'node:util';
import { chromium } from 'playwright-core';
import { parseRunnerCli } from './cli.mjs';
import { chromiumPath, codeServerEntry, hostNode, missingParts, runsDir } from './paths.mjs';

const EXIT = { pass: 0, fail: 1, timeout: 2, harness: 3 };
const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..', '..', '..');

const USAGE = `usage: node test/host/runner/run.mjs --ext <extensionDevelopmentPath> [--ext <another> ...]
         --tests <extensionTestsPath> --workspace <folder>
         [--timeout <seconds, default 300>] [--settings <settings.json to merge>]
         [--seed-storage <json of browser storage keys>] [--artifacts <dir>] [--keep] [--verbose]
         [--untrusted]   open the workspace in Restricted Mode (Workspace Trust on, folder not trusted)`;

// ---------------------------------------------------------------------------------------------
// Output: runner lines are prefixed, extension host output is printed as is so that mocha's
// report reads normally. Everything printed is also kept for the artifacts.

const t0 = Date.now();
const transcript = [];
function out(line) { transcript.push(line); console.log(line); }
function log(...parts) {
  const text = parts.map((p) => (typeof p === 'string' ? p : JSON.stringify(p))).join(' ');
  out(`[host-runner +${((Date.now() - t0) / 1000).toFixed(1)}s] ${text}`);
}

// The extension host's console output reaches us through the workbench's log service, mixed
// with the workbench's own log lines and without a marker telling them apart. These are the
// lines a signed-out, offline workbench always logs; they bury the test report. The patterns
// are anchored on how those messages start so that a test's own output is never swallowed.
// --verbose (or CODEACT_HOST_VERBOSE=1) shows everything.
const NOISE = [
  /^Resolv(?:ing|ed) connection token/,
  /^Creating a socket \(/,
  /^\[reconnection-grace-time\]/,
  /^Updating additional builtin extensions cache/,
  /^\[Service Worker\]/,
  /^\[AccountPolicyGate\]/,
  /^\[AgentHost/,
  /^\[ChatModelSelection\]/,
  /^Timed out waiting for authentication provider 'github'/,
  /^getaddrinfo (?:ENOTFOUND|EAI_AGAIN) open-vsx\.org/,
  /^\[DefaultAccount\]/,
  /^Creation of workbench contribution '[^']*' took \d+ms/,
  // The built-in Copilot Chat, signed out and offline.
  /^Migrat(?:ing|ed) (?:global|workspace) extension storage from github\.copilot-chat/,
  /^Error while migrating workspace file storage from 'github\.copilot-chat'/,
  /^navigator is now a global in nodejs/,
  /^Directory import '[^']*@github\/copilot\/sdk'/,
  /^\[ChatSessionsService\] Failed to resolve sessions for provider copilotcli/,
  /^GitHubLoginFailed/,
  /^No utility model is configured for 'copilot-utility/,
  // Teardown after the tests ended.
  /^Error fetching chat session input state Canceled/,
  /^Canceled: Canceled/,
];
const isNoise = (text) => NOISE.some((re) => re.test(text));

// Arguments are those of the console.* call in the extension host (mocha's reporter uses
// printf-style formats such as console.log('%d passing (%s)', n, time)).
function formatArgs(args) {
  const list = Array.isArray(args) ? args : [args];
  return format(...list);
}

// ---------------------------------------------------------------------------------------------
// Per-run state: every run gets its own user data, extensions, HOME, XDG and TMPDIR so that
// runs neither see each other nor the developer's own VS Code / code-server profile.

function createRunDir() {
  fs.mkdirSync(runsDir, { recursive: true });
  const root = fs.mkdtempSync(path.join(runsDir, 'r-'));
  const dirs = { root };
  for (const name of ['user-data', 'extensions', 'home', 'xdg-config', 'xdg-data', 'xdg-cache', 'tmp']) {
    dirs[name] = path.join(root, name);
    fs.mkdirSync(dirs[name], { recursive: true });
  }
  // VS Code and the git extension put unix sockets (vscode-ipc-<uuid>.sock, ~52 chars) into
  // XDG_RUNTIME_DIR. Linux caps socket paths at 107 bytes and VS Code only warns when the
  // path is longer, after which the socket silently fails; a deep cache folder gets there
  // quickly, so use a short folder under /tmp in that case.
  const runtime = path.join(root, 'rt');
  if (Buffer.byteLength(runtime) + 60 <= 107) {
    fs.mkdirSync(runtime);
    dirs.runtime = runtime;
  } else {
    dirs.runtime = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-rt-'));
    dirs.externalRuntime = true;
  }
  return dirs;
}

// The runtime dir only holds sockets and locks of processes that are gone by now, so it goes
// even when the run dir is kept.
function removeRuntimeDir(dirs) {
  if (dirs.externalRuntime) fs.rmSync(dirs.runtime, { recursive: true, force: true });
}

function writeUserSettings(dirs, extraSettingsFile, untrusted = false) {
  // Offline and deterministic: no update checks, no welcome page, no trust prompt. With
  // --untrusted, trust is on and the folder opens in Restricted Mode without asking.
  const settings = {
    'security.workspace.trust.enabled': untrusted,
    ...(untrusted ? { 'security.workspace.trust.startupPrompt': 'never', 'security.workspace.trust.emptyWindow': false } : {}),
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'extensions.ignoreRecommendations': true,
    'update.mode': 'none',
    'telemetry.telemetryLevel': 'off',
    'workbench.startupEditor': 'none',
    'workbench.enableExperiments': false,
    'workbench.tips.enabled': false,
  };
  if (extraSettingsFile) Object.assign(settings, JSON.parse(fs.readFileSync(extraSettingsFile, 'utf8')));
  const userDir = path.join(dirs['user-data'], 'User');
  fs.mkdirSync(userDir, { recursive: true });
  fs.writeFileSync(path.join(userDir, 'settings.json'), JSON.stringify(settings, null, 2));
}

function hostEnv(dirs, artifacts) {
  // The runner's own environment is passed on (DOCKER_HOST, proxies, test switches...) so
  // that the extension host sees what the developer or CI set, minus code-server's auth
  // variables, which would turn on a password prompt, and anything pointing at the real home.
  const env = {
    ...process.env,
    HOME: dirs.home,
    XDG_CONFIG_HOME: dirs['xdg-config'],
    XDG_DATA_HOME: dirs['xdg-data'],
    XDG_CACHE_HOME: dirs['xdg-cache'],
    XDG_RUNTIME_DIR: dirs.runtime,
    TMPDIR: dirs.tmp,
    CODEACT_HOST_RUN: '1',
    CODEACT_HOST_KIND: 'code-server',
    // Where CODEACT_HOST_SNAPSHOT pictures land, so a test can check or mention them.
    CODEACT_HOST_ARTIFACTS: artifacts,
  };
  for (const k of ['PASSWORD', 'HASHED_PASSWORD', 'GITHUB_TOKEN', 'VSCODE_PROXY_URI', 'CODE_SERVER_PARENT_PID']) delete env[k];
  // Variables of a VS Code terminal the runner may have been started from would make
  // code-server think it is nested inside that instance.
  for (const k of Object.keys(env)) if (k.startsWith('VSCODE_IPC') || k === 'VSCODE_CWD' || k === 'ELECTRON_RUN_AS_NODE') delete env[k];
  return env;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// code-server

// Arguments that point code-server at the run's private state; the installer and the server
// must agree on them or the server would not see what was installed.
function privateStateArgs(dirs) {
  const configFile = path.join(dirs.root, 'config.yaml');
  // Without --config, code-server creates ~/.config/code-server/config.yaml with a password.
  if (!fs.existsSync(configFile)) fs.writeFileSync(configFile, 'auth: none\ncert: false\n');
  return ['--config', configFile, '--user-data-dir', dirs['user-data'], '--extensions-dir', dirs.extensions];
}

function startCodeServer({ dirs, env, authority, untrusted = false }) {
  const args = [
    codeServerEntry,
    ...privateStateArgs(dirs),
    '--auth', 'none',
    '--bind-addr', authority,
    '--disable-telemetry',
    '--disable-update-check',
    ...(untrusted ? [] : ['--disable-workspace-trust']),
    '--disable-getting-started-override',
    '--ignore-last-opened',
    '--log', 'info',
    // A built VS Code web workbench ignores the ?payload= query (extensionDevelopmentPath,
    // extensionTestsPath) unless the smoke-test driver is enabled. Without this flag the
    // workbench opens normally and the tests silently never run.
    '--vscode-option', 'enable-smoke-test-driver',
  ];
  const logFile = path.join(dirs.root, 'code-server.log');
  const logStream = fs.createWriteStream(logFile);
  // detached: code-server forks a file watcher, the extension host, an agent host and
  // copilot-runtime; in their own process group they can all be stopped together. Killing
  // only the parent leaves them running (and holding the port) for 15-30 s.
  const child = spawn(hostNode, args, { env, cwd: dirs.home, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  child.stdout.pipe(logStream);
  child.stderr.pipe(logStream);
  return { child, logFile, logStream };
}

// Runs a short-lived command to completion, its output appended to logFile. Own process
// group too, so that a hung packager can be killed with everything it started.
function runToCompletion(command, args, { cwd, env, logFile, timeoutMs = 120_000 }) {
  return new Promise((resolve, reject) => {
    const logFd = fs.openSync(logFile, 'a');
    fs.writeSync(logFd, `$ ${[command, ...args].join(' ')}   (in ${cwd})\n`);
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', logFd, logFd], detached: true });
    const timer = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, timeoutMs);
    child.on('error', (e) => { clearTimeout(timer); fs.closeSync(logFd); reject(e); });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      fs.closeSync(logFd);
      if (code === 0) resolve();
      else reject(new Error(`${path.basename(args[0] || command)} ${args[1] || ''} failed (${signal || `exit ${code}`}); see ${logFile}`));
    });
  });
}

// The development extension is the --ext that holds the tests (the innermost one, since a
// fixture folder can sit inside the repository that is the extension under test); without
// such a folder, the first --ext. Callers then need not care about the order of --ext.
function pickDevExtension(exts, tests) {
  const holding = exts.filter((e) => tests.startsWith(e + path.sep));
  return holding.length ? holding.reduce((a, b) => (b.length > a.length ? b : a)) : exts[0];
}

// Every --ext but the development one. VS Code web keeps the launch payload in a Map
// (new Map(payload) in the workbench's environment service, code-server 4.139.1), so of
// several extensionDevelopmentPath entries only the last one survives: the workbench *would*
// accept a list, but the URL cannot carry one. Those extensions are therefore installed into
// the run's private extensions dir instead, through code-server's own --install-extension.
// That flag takes an extension id or a .vsix, not a folder ("Extension '<folder>' not found"),
// so each folder is first packed with @vscode/vsce (a devDependency of this repository).
// Consequences: they run as installed, not as development extensions; packing runs their
// vscode:prepublish script, if any; and they are copied, so a change needs a new run.
async function installHelperExtensions(folders, { dirs, env }) {
  if (folders.length === 0) return;
  const require = createRequire(import.meta.url);
  let vsce;
  try {
    vsce = require.resolve('@vscode/vsce/vsce');
  } catch {
    throw new Error('a second --ext needs @vscode/vsce (devDependency) to pack it; run npm install');
  }
  const logFile = path.join(dirs.root, 'install-extensions.log');
  const vsixDir = path.join(dirs.root, 'vsix');
  fs.mkdirSync(vsixDir);
  const vsixes = [];
  for (const [i, folder] of folders.entries()) {
    const vsix = path.join(vsixDir, `${i + 1}-${path.basename(folder)}.vsix`);
    await runToCompletion(process.execPath, [vsce, 'package', '--no-dependencies', '--skip-license',
      '--allow-missing-repository', '--allow-star-activation', '--out', vsix], { cwd: folder, env, logFile });
    vsixes.push(vsix);
  }
  await runToCompletion(hostNode, [codeServerEntry, ...privateStateArgs(dirs),
    ...vsixes.flatMap((v) => ['--install-extension', v])], { cwd: dirs.home, env, logFile });
  log(`installed ${folders.length} helper extension(s) into the run's extensions dir: ${folders.join(', ')}`);
}

async function waitForHealthz(server, authority, ms = 60_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      throw new Error(`code-server exited early (code ${server.child.exitCode}); see ${server.logFile}`);
    }
    try {
      const res = await fetch(`http://${authority}/healthz`);
      if (res.ok) return;
    } catch { /* not listening yet */ }
    await sleep(250);
  }
  throw new Error(`code-server did not answer on ${authority} within ${ms / 1000} s; see ${server.logFile}`);
}

// Members of the process group that are still running. Zombies are skipped: in a container
// whose PID 1 does not reap orphans they stay in the group forever although they are dead.
function liveGroupMembers(pgid) {
  try {
    const pids = [];
    for (const entry of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let stat;
      try { stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8'); } catch { continue; }
      // Fields after the parenthesised command name: state ppid pgrp ...
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') pids.push(Number(entry));
    }
    return pids;
  } catch {
    try { process.kill(-pgid, 0); return [pgid]; } catch { return []; }
  }
}

async function killProcessGroup(pgid) {
  if (!pgid || liveGroupMembers(pgid).length === 0) return;
  try { process.kill(-pgid, 'SIGTERM'); } catch { /* already gone */ }
  for (let i = 0; i < 50 && liveGroupMembers(pgid).length > 0; i++) await sleep(100);
  const left = liveGroupMembers(pgid);
  if (left.length > 0) {
    log(`process group ${pgid} still has ${left.length} process(es) after 5 s, sending SIGKILL`);
    try { process.kill(-pgid, 'SIGKILL'); } catch { /* already gone */ }
    for (let i = 0; i < 20 && liveGroupMembers(pgid).length > 0; i++) await sleep(100);
  }
}

// ---------------------------------------------------------------------------------------------
// Browser side

// The payload is VS Code web's "Extension Development Host" launch description. Paths are
// vscode-remote URIs because the extension and the tests live on the server's file system,
// where the (remote) extension host runs. Only one extensionDevelopmentPath gets through (see
// installHelperExtensions).
function workbenchUrl({ authority, devExt, tests, workspace }) {
  const remote = (p) => `vscode-remote://${authority}${p.split(path.sep).map(encodeURIComponent).join('/')}`;
  const payload = [
    ['extensionDevelopmentPath', remote(devExt)],
    ['extensionTestsPath', remote(tests)],
  ];
  return `http://${authority}/?folder=${encodeURIComponent(workspace)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
}

// Browser storage is what a web workbench keeps in the desktop's state database. Writing keys
// before the workbench loads lets a test start from a profile that is past first-run
// migrations (e.g. builtinChatExtensionEnablementMigration, which otherwise disables the
// built-in Copilot Chat on a fresh profile).
async function seedBrowserStorage(page, authority, file) {
  const items = JSON.parse(fs.readFileSync(file, 'utf8'));
  // Same origin as the workbench, hence the same IndexedDB; /healthz is a cheap page there.
  await page.goto(`http://${authority}/healthz`);
  await page.evaluate((entries) => new Promise((resolve, reject) => {
    const open = indexedDB.open('vscode-web-state-db-global');
    open.onupgradeneeded = () => {
      if (!open.result.objectStoreNames.contains('ItemTable')) open.result.createObjectStore('ItemTable');
    };
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const tx = db.transaction('ItemTable', 'readwrite');
      for (const [key, value] of entries) tx.objectStore('ItemTable').put(value, key);
      tx.oncomplete = () => { db.close(); resolve(); };
      tx.onerror = () => reject(tx.error);
    };
  }), Object.entries(items).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  log(`seeded browser storage: ${Object.keys(items).join(', ')}`);
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// Requests a test can make by console.log() from inside the extension host. The host has no
// handle on the browser page, so its log output is the only channel back to the runner.
function handleHook(page, firstArg, artifacts) {
  const snap = /^CODEACT_HOST_SNAPSHOT (\S+)\s*$/.exec(firstArg);
  if (snap) {
    const name = snap[1].replace(/[^\w.-]/g, '_');
    const file = path.join(artifacts, `${name}.png`);
    page.screenshot({ path: file })
      .then(() => log(`snapshot ${name}: ${file}`))
      .catch((e) => log(`snapshot ${name} failed: ${firstLine(e)}`));
    return true;
  }
  // What the page shows, for a test to assert on: `CODEACT_HOST_QUERY <id> <json>`, where the
  // JSON names a CSS selector and, optionally, what a frame's document must contain to be searched
  // (a chat's MCP App is a webview: a frame within a frame) and whether to scroll the first match
  // into view (`reveal`). The answer, the matching elements of
  // every frame that qualifies, lands in <artifacts>/query-<id>.json.
  const query = /^CODEACT_HOST_QUERY (\S+) (\{.*\})$/.exec(firstArg);
  if (query) {
    const [, id, spec] = query;
    const { selector, frameHas, reveal } = JSON.parse(spec);
    (async () => {
      const found = [];
      for (const frame of page.frames()) {
        const got = await frame
          .evaluate(
            ({ selector, frameHas, reveal }) => {
              if (frameHas && !document.querySelector(frameHas)) return [];
              const all = [...document.querySelectorAll(selector)];
              // For a screenshot of it: the first match scrolled into its frame's view.
              if (reveal && all[0]) all[0].scrollIntoView({ block: 'start' });
              return all.map((el) => ({
                tag: el.tagName.toLowerCase(),
                text: el.textContent,
                ...(el instanceof HTMLImageElement ? { src: el.src.slice(0, 40), naturalWidth: el.naturalWidth, alt: el.alt } : {}),
              }));
            },
            { selector, frameHas, reveal },
          )
          .catch(() => []);
        found.push(...got);
      }
      return found;
    })().then(
      (found) => fs.writeFileSync(path.join(artifacts, `query-${id.replace(/[^\w.-]/g, '_')}.json`), JSON.stringify(found)),
      (e) => log(`query ${id} failed: ${firstLine(e)}`),
    );
    return true;
  }
  const click = /^CODEACT_HOST_CLICK (.+)$/.exec(firstArg);
  if (click) {
    const text = click[1].trim();
    (async () => {
      // Match the visible text exactly: monaco buttons often carry a longer aria-label, and
      // finished confirmations can stay in the DOM hidden, hence :visible.
      const target = page.locator('.monaco-button:visible')
        .filter({ hasText: new RegExp(`^\\s*${escapeRegExp(text)}\\s*$`) })
        .first();
      await target.click({ timeout: 5000 });
    })().then(
      () => log(`CODEACT_HOST_CLICKED ${text} ok`),
      (e) => log(`CODEACT_HOST_CLICKED ${text} failed: ${firstLine(e)}`),
    );
    return true;
  }
  return false;
}

const firstLine = (e) => String((e && e.message) || e).split('\n')[0];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Artifacts

function copyIfExists(from, to) {
  if (!fs.existsSync(from)) return false;
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.cpSync(from, to, { recursive: true });
  return true;
}

function listFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => path.join(d.parentPath ?? d.path, d.name));
}

function collectArtifacts(dirs, artifacts) {
  const saved = [];
  if (copyIfExists(path.join(dirs.root, 'code-server.log'), path.join(artifacts, 'code-server.log'))) saved.push('code-server.log');
  if (copyIfExists(path.join(dirs.root, 'install-extensions.log'), path.join(artifacts, 'install-extensions.log'))) saved.push('install-extensions.log');
  // Extension host logs (remoteexthost.log, per-extension output channels) live under
  // <user-data>/logs/<session>/ on the server side; the browser's own logs are in IndexedDB
  // and reach us through codeAutomationLog instead (host-output.log).
  const logsRoot = path.join(dirs['user-data'], 'logs');
  const hostLogs = listFiles(logsRoot).filter((file) => /exthost/i.test(path.relative(logsRoot, file)));
  for (const file of hostLogs) copyIfExists(file, path.join(artifacts, 'logs', path.relative(logsRoot, file)));
  if (hostLogs.length) saved.push(`logs/ (${hostLogs.length} extension host log files)`);
  fs.writeFileSync(path.join(artifacts, 'host-output.log'), transcript.join('\n') + '\n');
  saved.push('host-output.log');
  return saved;
}

// Files a previous run may have left; stale ones would be mistaken for this run's.
function clearOwnArtifacts(artifacts) {
  for (const name of ['failure.png', 'final.png', 'code-server.log', 'install-extensions.log', 'host-output.log', 'logs']) {
    fs.rmSync(path.join(artifacts, name), { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Main

class Interrupted extends Error {
  constructor(message, exitCode) {
    super(message);
    this.exitCode = exitCode;
  }
}

async function main() {
  let opts;
  try {
    opts = parseRunnerCli(process.argv.slice(2), { usage: USAGE, repoRoot });
  } catch (e) {
    console.error(`host-runner: ${e.message}\n${USAGE}`);
    return EXIT.harness;
  }
  const missing = missingParts();
  if (missing.length) {
    console.error(`host-runner: the VS Code host toolchain is missing:\n  ${missing.join('\n  ')}\n`
      + 'Install it with: bash scripts/ensure-vscode-host.sh (apt chromium, Node 24 and code-server into the dev cache).');
    return EXIT.harness;
  }

  fs.mkdirSync(opts.artifacts, { recursive: true });
  clearOwnArtifacts(opts.artifacts);
  const dirs = createRunDir();
  writeUserSettings(dirs, opts.settings, opts.untrusted);
  const env = hostEnv(dirs, opts.artifacts);
  // Playwright puts Chromium's temporary profile into os.tmpdir(); keep it in the run dir too.
  process.env.TMPDIR = dirs.tmp;

  let server;
  let browser;
  let page;
  let exitCode = EXIT.harness;
  // The timeout is a budget for the whole run (helper install, start-up, tests), and like a
  // signal it must be able to cut into any step, so every step races against it.
  let interrupt;
  const interrupted = new Promise((_, reject) => { interrupt = reject; });
  interrupted.catch(() => {}); // only ever observed through guard()
  const guard = (promise) => Promise.race([promise, interrupted]);
  const deadline = setTimeout(() => interrupt(new Interrupted(
    `TIMEOUT: the tests did not finish within ${opts.timeoutS} s`, EXIT.timeout)), opts.timeoutS * 1000);
  let signals = 0;
  const onSignal = (sig) => {
    // A second Ctrl-C must not skip the cleanup: code-server's process group would survive us.
    if (signals++ > 0) { log(`received ${sig} again, still cleaning up`); return; }
    interrupt(new Interrupted(`received ${sig}, stopping`, EXIT.harness));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    const port = await guard(freePort());
    const authority = `127.0.0.1:${port}`;
    log(`run dir ${dirs.root}`);
    const devExt = pickDevExtension(opts.exts, opts.tests);
    await guard(installHelperExtensions(opts.exts.filter((e) => e !== devExt), { dirs, env }));
    server = startCodeServer({ dirs, env, authority, untrusted: opts.untrusted });
    await guard(waitForHealthz(server, authority));
    log(`code-server is up on ${authority}`);

    browser = await guard(chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      // With the private HOME/XDG, Chromium's crashpad and caches stay in the run dir.
      env,
      // On Ctrl-C the runner itself closes the browser, after the failure screenshot.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
    }));
    const context = await guard(browser.newContext({ viewport: { width: 1400, height: 900 } }));
    page = await guard(context.newPage());

    let resolveExit;
    const exited = new Promise((resolve) => { resolveExit = resolve; });
    // The workbench's log service writes to window.codeAutomationLog when it exists, and
    // when the extension host that ran the tests ends, the workbench calls
    // window.codeAutomationExit(code) (the hooks @vscode/test-web uses, too). The extension
    // host's console output arrives through the first one.
    await guard(page.exposeFunction('codeAutomationLog', (type, args) => {
      const first = Array.isArray(args) && typeof args[0] === 'string' ? args[0] : '';
      if (handleHook(page, first, opts.artifacts)) return;
      const text = formatArgs(args);
      if (!opts.verbose && isNoise(text)) return;
      out(type === 'error' || type === 'warn' ? `[${type}] ${text}` : text);
    }));
    await guard(page.exposeFunction('codeAutomationExit', (code) => resolveExit(code)));
    page.on('pageerror', (e) => { if (opts.verbose || !isNoise(e.message)) log(`page error: ${firstLine(e)}`); });
    page.on('crash', () => resolveExit('crash'));
    if (opts.verbose) page.on('console', (m) => out(`[browser ${m.type()}] ${m.text()}`));

    if (opts.seedStorage) await guard(seedBrowserStorage(page, authority, opts.seedStorage));
    const url = workbenchUrl({ authority, devExt, tests: opts.tests, workspace: opts.workspace });
    log(`opening the workbench, development extension ${devExt}`);
    if (opts.verbose) log(url);
    // 'commit': the page's load event says nothing about the tests; codeAutomationExit does.
    await guard(page.goto(url, { waitUntil: 'commit' }));

    const outcome = await guard(exited);
    if (outcome === 'crash') {
      log('the workbench page crashed');
      exitCode = EXIT.harness;
    } else {
      // The host reports its own exit code; anything but 0 means the tests did not pass.
      log(`extension host exited with code ${outcome}`);
      exitCode = outcome === 0 ? EXIT.pass : EXIT.fail;
    }
  } catch (e) {
    if (e instanceof Interrupted) {
      log(e.message);
      exitCode = e.exitCode;
    } else {
      log(`harness error: ${(e && e.stack) || e}`);
      exitCode = EXIT.harness;
    }
  } finally {
    clearTimeout(deadline);
    const keepRun = opts.keep || exitCode !== EXIT.pass;
    if (page && keepRun) {
      const shot = path.join(opts.artifacts, exitCode === EXIT.pass ? 'final.png' : 'failure.png');
      await page.screenshot({ path: shot, timeout: 10_000 }).then(() => log(`screenshot ${shot}`), (e) => log(`screenshot failed: ${firstLine(e)}`));
    }
    if (browser) await browser.close().catch(() => {});
    if (server) {
      await killProcessGroup(server.child.pid);
      await new Promise((resolve) => server.logStream.end(resolve));
    }
    if (keepRun) {
      const saved = collectArtifacts(dirs, opts.artifacts);
      log(`artifacts in ${opts.artifacts}: ${saved.join(', ')}`);
      log(`run dir kept: ${dirs.root}`);
    } else {
      fs.rmSync(dirs.root, { recursive: true, force: true });
    }
    removeRuntimeDir(dirs);
    log(`done in ${((Date.now() - t0) / 1000).toFixed(1)} s, exit code ${exitCode}`);
  }
  return exitCode;
}

process.exitCode = await main();
// Playwright or a pending fetch can keep the event loop alive after cleanup.
process.exit(process.exitCode);
