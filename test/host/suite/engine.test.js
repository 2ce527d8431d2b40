// The engine's state as a person meets it in the real VS Code: the walkthrough, the view's welcome
// content, the status item and the notification, before any chat fails. First of the suites,
// while the view has no runs (the welcome content shows only in an empty view).
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
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
/** The Podman service scripts/ensure-podman.sh starts (rootful), when it runs on this machine. */
const PODMAN_SERVICE = '/run/codeact-podman/podman.sock';

/** A Unix socket file nothing listens at (a stopped Docker Desktop leaves its socket so): connecting is refused. */
function deadSocket(file) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // Bound and closed without listening: the file stays (Node's own servers remove theirs on close).
  execFileSync('python3', ['-c', 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', file]);
}

/**
 * The engine settings changed and back make the window find its engine again from the
 * environment (the connection is made anew only when a setting that names it changes).
 */
async function findEngineAgain() {
  await h.setting('dockerTlsVerify', true);
  await h.setting('dockerTlsVerify', undefined);
}

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
    // A change of the engine setting is checked again by itself.
    await h.waitFor(() => api.engineState() === 'unreachable', 20_000, 'the check after the setting changed');
    assert.equal(await vscode.commands.executeCommand('codeactSandbox.checkEngine'), 'unreachable');
    assert.equal(api.statusItem().text, '$(warning) Sandbox: engine not reachable');
    // The model is told the same at its call, in its own words.
    await assert.rejects(h.run('print(1)'), /not reachable, so the program was not run/);
    await vscode.commands.executeCommand('codeactSandbox.artifacts.focus');
    await h.snapshot('engine-unreachable');
    await h.setting('dockerHost', undefined);
    assert.equal(await vscode.commands.executeCommand('codeactSandbox.checkEngine'), 'ok');
    assert.equal(api.engineState(), 'ok');
    // The warning is over once Retry found the engine, before any chat chose an image; the Retry's answer is shown.
    assert.match(api.statusItem().text, /^\$\(vm\) Sandbox: Docker$/);
    assert.match(api.statusItem().tooltip, /Engine: Docker [\d.]+/);
    await h.snapshot('engine-back-after-retry');
  });

  it('Podman only: Docker does not answer, Podman does where its tools look; Use Podman runs the program there, named Podman', async function () {
    if (!fs.existsSync(PODMAN_SERVICE)) this.skip();
    this.timeout(240_000);
    // Docker Desktop stopped (its socket left behind, nothing listening), DOCKER_HOST unset, and
    // Podman's rootless socket where Podman's own tools look for it.
    assert.equal(process.env.DOCKER_HOST, undefined);
    const dockerDesktop = path.join(os.homedir(), '.docker', 'run', 'docker.sock');
    const podmanSocket = path.join(process.env.XDG_RUNTIME_DIR, 'podman', 'podman.sock');
    deadSocket(dockerDesktop);
    fs.mkdirSync(path.dirname(podmanSocket), { recursive: true });
    fs.symlinkSync(PODMAN_SERVICE, podmanSocket);
    try {
      await findEngineAgain();
      assert.equal(await vscode.commands.executeCommand('codeactSandbox.checkEngine'), 'unreachable');
      assert.equal(api.statusItem().text, '$(warning) Sandbox: Docker not answering, Podman found');
      await assert.rejects(h.run('print(1)'), {
        message: /^Docker does not answer on the user's computer, but Podman does \(Podman [\d.]+\), so the program was not run\. Ask the user to choose Use Podman in the CodeAct Sandbox view, or to start Docker, then try again\.$/,
      });
      await vscode.commands.executeCommand('codeactSandbox.artifacts.focus');
      await h.snapshot('podman-only');
      // The view's button.
      assert.equal(await vscode.commands.executeCommand('codeactSandbox.usePodman'), 'ok');
      assert.equal(vscode.workspace.getConfiguration('codeactSandbox').get('dockerHost'), 'unix://$XDG_RUNTIME_DIR/podman/podman.sock');
      assert.match(api.statusItem().text, /^\$\(vm\) Sandbox: Podman$/);
      assert.equal(await h.run('print(6 * 7)'), 'stdout:\n42');
      assert.match(api.backend().engine, /^Podman [\d.]+ at unix:\/\/.*\/podman\/podman\.sock \(setting codeactSandbox\.dockerHost\)$/);
      assert.match(api.statusItem().text, /^\$\(vm\) Sandbox: Podman$/);
      assert.doesNotMatch(api.statusItem().tooltip, /Docker/);
      await h.snapshot('podman-in-use');
    } finally {
      // The view shows its welcome content only while it is empty: the next persons' states need it so.
      await vscode.commands.executeCommand('codeactSandbox.clearAll', { confirmed: true });
      await h.setting('dockerHost', undefined);
      fs.rmSync(podmanSocket, { force: true });
      fs.rmSync(dockerDesktop, { force: true });
      await findEngineAgain();
    }
    assert.equal(await vscode.commands.executeCommand('codeactSandbox.checkEngine'), 'ok');
  });

  it('no engine at all: install links for this platform in the view, and the model is told to install one, not to start it', async function () {
    const pathBefore = process.env.PATH;
    // Neither docker nor podman on PATH, and nothing at the engine's address: no engine on this computer.
    process.env.PATH = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-empty-path-'));
    try {
      await h.setting('dockerHost', NO_ENGINE);
      assert.equal(await vscode.commands.executeCommand('codeactSandbox.checkEngine'), 'none');
      assert.equal(api.statusItem().text, '$(warning) Sandbox: no engine');
      await assert.rejects(h.run('print(1)'), {
        message:
          "No container engine is installed on the user's computer, so the program was not run. Ask the user to install Docker Engine or Podman (the CodeAct Sandbox view links to both), then try again.",
      });
      await vscode.commands.executeCommand('codeactSandbox.artifacts.focus');
      await h.snapshot('engine-none');
    } finally {
      process.env.PATH = pathBefore;
      await h.setting('dockerHost', undefined);
    }
    assert.equal(await vscode.commands.executeCommand('codeactSandbox.checkEngine'), 'ok');
  });

  it('the window as code-server shows it: where the extension runs, and the advice of a remote window\'s kind', async function () {
    const place = api.windowPlace();
    const ext = vscode.extensions.getExtension(h.EXTENSION_ID);
    console.log(`code-server window: remoteName ${vscode.env.remoteName}, extensionKind ${ext.extensionKind}, uiKind ${vscode.env.uiKind}, folder ${vscode.workspace.workspaceFolders?.[0]?.uri.toString()}`);
    // code-server runs the extension host next to the workspace (its server): never "apart".
    assert.equal(place.apart, false);
    assert.equal(ext.extensionKind, vscode.ExtensionKind.Workspace);
    // What the view says in an SSH window whose extension runs on the person's computer (the key
    // the extension sets there; code-server cannot open such a window).
    await h.setting('dockerHost', NO_ENGINE);
    try {
      assert.equal(await vscode.commands.executeCommand('codeactSandbox.checkEngine'), 'unreachable');
      await vscode.commands.executeCommand('setContext', 'codeactSandbox.window', 'ssh');
      await vscode.commands.executeCommand('codeactSandbox.artifacts.focus');
      await h.snapshot('remote-ssh-window');
      await vscode.commands.executeCommand('setContext', 'codeactSandbox.window', 'codespaces');
      await h.snapshot('remote-codespaces-window');
    } finally {
      await vscode.commands.executeCommand('setContext', 'codeactSandbox.window', 'local');
      await h.setting('dockerHost', undefined);
    }
    assert.equal(await vscode.commands.executeCommand('codeactSandbox.checkEngine'), 'ok');
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
