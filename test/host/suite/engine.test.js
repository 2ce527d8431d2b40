// The engine's state as a person meets it in the real VS Code: the walkthrough, the view's welcome
// content, the status item and the notification, before any chat fails. First of the suites,
// while the view has no runs (the welcome content shows only in an empty view).
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const vscode = require('vscode');
const h = require('./helpers');

/** An address where no engine answers: nothing listens at this socket path. */
const NO_ENGINE = 'unix:///run/codeact-sandbox-host-test-no-engine.sock';
const WALKTHROUGH = `${h.EXTENSION_ID}#start`;
/** An image no engine has, from a registry on loopback where nothing listens: the pull fails at once, and reaches nothing else. */
const MISSING_IMAGE = '127.0.0.1:9/codeact-sandbox-missing:never';

describe('the container engine, as the person sees it (host)', function () {
  this.timeout(120_000);
  let api;
  before(async function () {
    api = await h.activate();
  });
  after(async function () {
    await h.setting('dockerHost', undefined);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('opens the walkthrough, whose engine step is checked off when the engine answers its button', async function () {
    await h.waitFor(() => api.engineState() === 'ok', 60_000, 'the check made at activation');
    await vscode.commands.executeCommand('workbench.action.openWalkthrough', WALKTHROUGH, false);
    await h.snapshot('walkthrough');
    // The step's button.
    assert.equal(await vscode.commands.executeCommand('codeactSandbox.checkEngine'), 'ok');
    // Prepare with the test image configured: nothing of ours to build, and its step is done.
    const prepared = await vscode.commands.executeCommand('codeactSandbox.prepareImage');
    assert.deepEqual(prepared, { notUsed: `codeactSandbox.image names ${h.IMAGE}` });
    await h.snapshot('walkthrough-engine-and-image');
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('shows a stopped engine in the view with its buttons and in the status bar, and clears it on Retry', async function () {
    await h.setting('dockerHost', NO_ENGINE);
    assert.equal(await vscode.commands.executeCommand('codeactSandbox.checkEngine'), 'unreachable');
    assert.equal(api.engineState(), 'unreachable');
    // The model is told the same at its call, in its own words.
    await assert.rejects(h.run('print(1)'), /not reachable, so the program was not run/);
    await vscode.commands.executeCommand('codeactSandbox.artifacts.focus');
    await h.snapshot('engine-unreachable');
    await h.setting('dockerHost', undefined);
    assert.equal(await vscode.commands.executeCommand('codeactSandbox.checkEngine'), 'ok');
    assert.equal(api.engineState(), 'ok');
    await h.snapshot('engine-ok');
  });

  it('shows a socket that refuses this user as permission denied, with its own sentence', async function () {
    // The runner drops root's permission override for the window (test/host/runHostTests.mjs).
    if (process.env.CODEACT_HOST_NO_DAC_OVERRIDE !== '1') this.skip();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-denied-'));
    const socket = path.join(dir, 'engine.sock');
    const server = net.createServer((c) => c.destroy());
    await new Promise((resolve) => server.listen(socket, resolve));
    try {
      // Another user's socket, as /var/run/docker.sock is to a user outside the docker group.
      fs.chownSync(socket, 65534, 65534);
      fs.chmodSync(socket, 0o600);
      await h.setting('dockerHost', `unix://${socket}`);
      assert.equal(await vscode.commands.executeCommand('codeactSandbox.checkEngine'), 'denied');
      // The model is told the same in its own words.
      await assert.rejects(h.run('print(1)'), {
        message:
          "The Docker engine refused this user (permission denied on its socket), so the program was not run. Ask the user to add their account to the docker group (sudo usermod -aG docker $USER, then log out and in again), or to point the engine connection (DOCKER_HOST, a Docker context, or this tool's engine settings) at an engine this user may use, such as rootless Docker or Podman.",
      });
      await vscode.commands.executeCommand('codeactSandbox.artifacts.focus');
      await h.snapshot('engine-denied');
    } finally {
      await h.setting('dockerHost', undefined);
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
    assert.equal(await vscode.commands.executeCommand('codeactSandbox.checkEngine'), 'ok');
  });

  it('shows an image the engine lacks in the view, with its buttons', async function () {
    await h.setting('image', MISSING_IMAGE);
    try {
      await assert.rejects(
        h.run('print(1)'),
        { message: `The sandbox image "${MISSING_IMAGE}" is not on this machine and could not be pulled. Ask the user to pull it, or to set the codeactSandbox.image setting to an image that has python3.` },
      );
      await vscode.commands.executeCommand('codeactSandbox.artifacts.focus');
      await h.snapshot('image-missing');
    } finally {
      await h.setting('image', h.IMAGE);
    }
  });
});
