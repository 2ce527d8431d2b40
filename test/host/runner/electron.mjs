#!/usr/bin/env node
// The same integration tests under desktop VS Code, through @vscode/test-electron, for
// machines that can download VS Code (update.code.visualstudio.com). Takes the options of
// run.mjs so that one suite runs under both:
//
//   node test/host/runner/electron.mjs --ext <extensionDevelopmentPath> [--ext <another> ...]
//        --tests <extensionTestsPath> --workspace <folder> [--timeout <s>] [--settings <json>]
//
// Differences from run.mjs: desktop VS Code accepts several --extensionDevelopmentPath, so
// every --ext is a development extension (nothing is packed or installed); --seed-storage
// and the CODEACT_HOST_SNAPSHOT/CLICK hooks are browser features of run.mjs and do nothing
// here (CODEACT_HOST_KIND=electron tells a test so). Needs a display (xvfb-run on CI).
// Exit codes as in run.mjs: 0 pass, 1 fail, 2 timeout, 3 harness error.
// Env: CODEACT_VSCODE_VERSION (default "stable"), CODEACT_VSCODE_EXECUTABLE (skip the download).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseRunnerCli } from './cli.mjs';
import { runTests, TestRunFailedError } from '@vscode/test-electron';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..', '..', '..');
const EXIT = { pass: 0, fail: 1, timeout: 2, harness: 3 };

const USAGE = 'usage: node test/host/runner/electron.mjs: the options of run.mjs (--help there); --seed-storage and --untrusted apply only to it';

function parseCli(argv) {
  const opts = parseRunnerCli(argv, { usage: USAGE, repoRoot });
  if (opts.seedStorage) console.warn('electron: --seed-storage only applies to the browser workbench of run.mjs; ignored');
  if (opts.untrusted) console.warn('electron: --untrusted only applies to the browser workbench of run.mjs; ignored');
  return opts;
}

async function main() {
  let opts;
  try {
    opts = parseCli(process.argv.slice(2));
  } catch (e) {
    console.error(`electron: ${e.message}`);
    return EXIT.harness;
  }

  // A private profile per run, like run.mjs: without it @vscode/test-electron reuses
  // .vscode-test/user-data across runs. An empty private extensions dir keeps the
  // developer's own extensions out, so --disable-extensions is not needed (and not passed:
  // nothing may get between the tests and the other development extensions they rely on).
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-electron-'));
  const userData = path.join(runDir, 'user-data');
  const extensionsDir = path.join(runDir, 'extensions');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  fs.mkdirSync(extensionsDir, { recursive: true });
  const settings = {
    'security.workspace.trust.enabled': false,
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'update.mode': 'none',
    'telemetry.telemetryLevel': 'off',
    'workbench.startupEditor': 'none',
    ...(opts.settings ? JSON.parse(fs.readFileSync(opts.settings, 'utf8')) : {}),
  };
  fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  fs.mkdirSync(opts.artifacts, { recursive: true });

  // @vscode/test-electron does not hand out the VS Code process; its own SIGINT handler
  // closes VS Code gracefully on the first signal and kills the tree on the second, so a
  // timeout goes through that same path.
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    console.error(`electron: TIMEOUT, the tests did not finish within ${opts.timeoutS} s`);
    if (process.listenerCount('SIGINT') === 0) process.exit(EXIT.timeout);
    process.emit('SIGINT');
    setTimeout(() => process.emit('SIGINT'), 5000).unref();
    setTimeout(() => process.exit(EXIT.timeout), 10000).unref();
  }, opts.timeoutS * 1000);
  timer.unref();

  let exitCode;
  try {
    await runTests({
      version: process.env.CODEACT_VSCODE_VERSION || 'stable',
      vscodeExecutablePath: process.env.CODEACT_VSCODE_EXECUTABLE || undefined,
      extensionDevelopmentPath: opts.exts,
      extensionTestsPath: opts.tests,
      extensionTestsEnv: {
        CODEACT_HOST_RUN: '1',
        CODEACT_HOST_KIND: 'electron',
        CODEACT_HOST_ARTIFACTS: opts.artifacts,
      },
      launchArgs: [
        opts.workspace,
        `--user-data-dir=${userData}`,
        `--extensions-dir=${extensionsDir}`,
      ],
    });
    exitCode = EXIT.pass;
  } catch (e) {
    if (timedOut) exitCode = EXIT.timeout;
    else if (e instanceof TestRunFailedError && e.code !== undefined) exitCode = EXIT.fail;
    else {
      // Download failures, a missing display, VS Code killed by a signal...
      console.error(`electron: harness error: ${(e && e.stack) || e}`);
      exitCode = EXIT.harness;
    }
  } finally {
    clearTimeout(timer);
  }
  // A harness error happens before VS Code ran: its profile holds nothing worth keeping.
  if (opts.keep || exitCode === EXIT.fail || exitCode === EXIT.timeout) console.log(`electron: profile kept: ${runDir}`);
  else fs.rmSync(runDir, { recursive: true, force: true });
  return exitCode;
}

process.exit(await main());
