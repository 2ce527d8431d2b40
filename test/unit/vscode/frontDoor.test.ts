// The front door's logic as a person meets it, on fakes: the window's place, Retry, the person's
// words on their own commands, the buttons that change the engine, Copy Path in a remote window.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ToolError } from '../../../src/core/errors';
import { currentOwner } from '../../../src/docker/container/labels';
import { ImageBuildError } from '../../../src/docker/images/errors';
import { artifactItem, copiedApartSentence } from '../../../src/vscode/artifactItems';
import { SettingsReader } from '../../../src/vscode/config';
import { engineCommands } from '../../../src/vscode/engineCommands';
import { ENGINE_NOTICE_DISMISSED, engineSentence } from '../../../src/vscode/engineState';
import { COMMAND } from '../../../src/vscode/ids';
import { forPerson } from '../../../src/vscode/personText';
import { sandboxCommands } from '../../../src/vscode/sandboxCommands';
import { SandboxService } from '../../../src/vscode/sandboxService';
import { sshHostOf, windowPlace } from '../../../src/vscode/windowPlace';
import { FakeState, FakeUi, FakeWorkspace, recordingLogger } from './fakes';

const NO_ENGINE = 'unix:///nonexistent/codeact-front-door.sock';

describe('the front door (unit)', () => {
  describe('where the extension runs, by the kind of window', () => {
    it('a remote window with the extension on the person\'s computer is "apart"; next to the workspace (moved, a browser, code-server) it is not', () => {
      assert.deepEqual(windowPlace(undefined, 1), { kind: 'local', apart: false });
      assert.deepEqual(windowPlace('ssh-remote', 1, 'ssh-remote+build-box'), { kind: 'ssh', apart: true, remoteName: 'ssh-remote', sshHost: 'build-box' });
      assert.deepEqual(windowPlace('ssh-remote', 2, 'ssh-remote+build-box'), { kind: 'ssh', apart: false, remoteName: 'ssh-remote', sshHost: 'build-box' });
      assert.deepEqual(windowPlace('wsl', 1, 'wsl+Ubuntu'), { kind: 'wsl', apart: true, remoteName: 'wsl' });
      assert.deepEqual(windowPlace('attached-container', 1), { kind: 'devcontainer', apart: true, remoteName: 'attached-container' });
      assert.deepEqual(windowPlace('codespaces', 1), { kind: 'codespaces', apart: true, remoteName: 'codespaces' });
      // What code-server reports (seen in the host test): its own authority, the extension next to the workspace.
      assert.deepEqual(windowPlace('127.0.0.1:33051', 2), { kind: 'remote', apart: false, remoteName: '127.0.0.1:33051' });
    });

    it('reads the SSH host from the folder\'s authority, plain or as Remote-SSH\'s hex JSON, and nothing that is not a host', () => {
      assert.equal(sshHostOf('ssh-remote+me@build-box.example.org'), 'me@build-box.example.org');
      assert.equal(sshHostOf(`ssh-remote+${Buffer.from(JSON.stringify({ hostName: 'build-box' })).toString('hex')}`), 'build-box');
      assert.equal(sshHostOf('ssh-remote+build box;rm'), undefined);
      assert.equal(sshHostOf('wsl+Ubuntu'), undefined);
    });
  });

  describe('the buttons that change the engine', () => {
    it('Use Podman writes the address Podman answers at (and no context beside it), then checks and says the answer', async () => {
      const ui = new FakeUi();
      const checks: boolean[] = [];
      const commands = engineCommands(
        { podmanAddress: async () => 'unix://$XDG_RUNTIME_DIR/podman/podman.sock', checkEngine: async (asked?: boolean) => (checks.push(asked === true), 'ok') },
        ui,
        { kind: 'local', apart: false },
        'codeact-sandbox.codeact-sandbox',
      );
      assert.equal(await commands[COMMAND.usePodman](), 'ok');
      assert.deepEqual(ui.shown, ['user setting: codeactSandbox.dockerContext = undefined', 'user setting: codeactSandbox.dockerHost = "unix://$XDG_RUNTIME_DIR/podman/podman.sock"']);
      assert.deepEqual(checks, [true]);
    });

    it('the SSH host\'s engine is its ssh:// address; Run There moves the extension next to the workspace and offers the reload', async () => {
      const ui = new FakeUi();
      ui.notifyAnswer = 'Reload Window';
      const sandboxes = { podmanAddress: async () => undefined, checkEngine: async () => 'ok' as const };
      const ssh = engineCommands(sandboxes, ui, { kind: 'ssh', apart: true, remoteName: 'ssh-remote', sshHost: 'me@build-box' }, 'codeact-sandbox.codeact-sandbox');
      await ssh[COMMAND.useSshEngine]();
      assert.equal(ui.userSettings.get('codeactSandbox.dockerHost'), 'ssh://me@build-box');
      ui.userSettings.set('remote.extensionKind', { 'other.ext': ['ui'] });
      const wsl = engineCommands(sandboxes, ui, { kind: 'wsl', apart: true, remoteName: 'wsl' }, 'codeact-sandbox.codeact-sandbox');
      await wsl[COMMAND.runThere]();
      assert.deepEqual(ui.userSettings.get('remote.extensionKind'), { 'other.ext': ['ui'], 'codeact-sandbox.codeact-sandbox': ['workspace'] });
      assert.deepEqual(ui.shown.slice(-2), [
        'notify: CodeAct Sandbox will run in WSL after the window reloads, and use the engine there. [Reload Window]',
        'command: workbench.action.reloadWindow',
      ]);
      // No Podman answers: said, nothing written.
      const none = engineCommands(sandboxes, ui, { kind: 'local', apart: false }, 'x');
      const before = ui.userSettings.get('codeactSandbox.dockerHost');
      assert.equal(await none[COMMAND.usePodman](), undefined);
      assert.equal(ui.userSettings.get('codeactSandbox.dockerHost'), before);
    });
  });

  describe('Retry, and the engine back', () => {
    let ui: FakeUi;
    let workspace: FakeWorkspace;
    let service: SandboxService;
    beforeEach(() => {
      ui = new FakeUi();
      workspace = new FakeWorkspace();
      workspace.user.dockerHost = NO_ENGINE;
      const log = recordingLogger();
      const state = new FakeState();
      state.values.set(ENGINE_NOTICE_DISMISSED, true);
      service = new SandboxService({ settings: new SettingsReader(log, workspace, ui), log, owner: currentOwner('vscode', 'unit'), ui, workspace, state, engineCliFound: () => true });
    });
    afterEach(() => service.dispose());

    it('a person\'s Retry shows that it asks and what it found, every time (it showed neither)', async () => {
      assert.equal(await service.checkEngine(true), 'unreachable');
      assert.deepEqual(ui.shown, [
        'busy: CodeAct Sandbox: checking the container engine',
        `notify: CodeAct Sandbox: ${engineSentence('unreachable')} [Retry | Open Engine Settings | Show Log]`,
      ]);
      // The window's own check says nothing but the view and the status item.
      assert.equal(await service.checkEngine(false), 'unreachable');
      assert.equal(ui.shown.length, 2);
      assert.deepEqual(service.statusShown, { text: '$(warning) Sandbox: engine not reachable', tooltip: `**CodeAct Sandbox**\n\n${engineSentence('unreachable')}\n\nClick to check again.` });
    });

    it('no engine installed: the model is told to install one, as the person is (it was told to start Docker)', async () => {
      const none = new SandboxService({
        settings: new SettingsReader(recordingLogger(), workspace, ui),
        log: recordingLogger(),
        owner: currentOwner('vscode', 'unit'),
        ui,
        workspace,
        state: new FakeState(),
        engineCliFound: () => false,
        platform: 'win32',
      });
      try {
        await assert.rejects(none.acquire('chat:1', new AbortController().signal), {
          message: "No container engine is installed on the user's computer, so the program was not run. Ask the user to install Docker Desktop or Podman Desktop (the CodeAct Sandbox view links to both), then try again.",
        });
        assert.equal(none.engineState.state, 'none');
      } finally {
        await none.dispose();
      }
    });

    it('a Podman that answers while nothing named the engine: the model is told to have the person use it', async () => {
      delete workspace.user.dockerHost;
      const podman = new SandboxService({
        settings: new SettingsReader(recordingLogger(), workspace, ui),
        log: recordingLogger(),
        owner: currentOwner('vscode', 'unit'),
        ui,
        workspace,
        state: new FakeState(),
        findPodman: async () => ({ candidate: { address: 'unix:///run/podman/podman.sock', setting: 'unix:///run/podman/podman.sock', why: 'rootful Podman' }, identity: { kind: 'podman', version: '5.2.0', label: 'Podman 5.2.0' } }),
      });
      const env = { DOCKER_HOST: process.env.DOCKER_HOST, DOCKER_CONTEXT: process.env.DOCKER_CONTEXT, HOME: process.env.HOME };
      // The platform default: a stopped Docker Desktop's socket (bound, nobody listening) in a home of the test's own.
      const home = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-front-door-'));
      fs.mkdirSync(path.join(home, '.docker', 'run'), { recursive: true });
      execFileSync('python3', ['-c', 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', path.join(home, '.docker', 'run', 'docker.sock')]);
      delete process.env.DOCKER_HOST;
      delete process.env.DOCKER_CONTEXT;
      process.env.HOME = home;
      try {
        assert.equal(await podman.checkEngine(false), 'unreachable');
        assert.equal(podman.engineState.advice.podman?.setting, 'unix:///run/podman/podman.sock');
        assert.equal(podman.statusShown?.text, '$(warning) Sandbox: Docker not answering, Podman found');
        assert.equal(await podman.podmanAddress(), 'unix:///run/podman/podman.sock');
      } finally {
        for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k];
        else process.env[k] = v;
        await podman.dispose();
        fs.rmSync(home, { recursive: true, force: true });
      }
    });
  });

  describe("the person's words on their own commands", () => {
    it('turns the model\'s sentence into the person\'s: no "Ask the user to", no "the program was not run" after Prepare', () => {
      assert.equal(
        forPerson('Docker is not reachable, so the program was not run. Ask the user to start Docker (Docker Desktop or the docker service) or to check the Docker connection settings, then try again.'),
        'Docker is not reachable. Start Docker (Docker Desktop or the docker service) or check the Docker connection settings, then try again.',
      );
      assert.equal(
        forPerson('The codeactSandbox.pythonPackages setting asks for packages, but the workspace is not trusted, so nothing is installed with network access for it. Ask the user to trust the workspace, or to remove the packages from that setting.'),
        'The codeactSandbox.pythonPackages setting asks for packages, but the workspace is not trusted, so nothing is installed with network access for it. Trust the workspace, or remove the packages from that setting.',
      );
      assert.equal(
        forPerson('The Dev Container image build failed (exit code 1); the build log is in the "CodeAct Sandbox" output channel. Ask the user to fix .devcontainer/devcontainer.json (or its Dockerfile) and rebuild, or to switch the sandbox backend to docker.'),
        'The Dev Container image build failed (exit code 1); the build log is in the "CodeAct Sandbox" output channel. Fix .devcontainer/devcontainer.json (or its Dockerfile) and rebuild, or switch the sandbox backend to docker.',
      );
      assert.equal(forPerson("The Docker engine refused this user (permission denied on its socket), so the program was not run. Ask the user to add their account to the docker group."), 'The Docker engine refused your account (permission denied on its socket). Add your account to the docker group.');
    });

    function commandsOn(prepare: () => Promise<unknown>, rebuild: () => Promise<void>) {
      const ui = new FakeUi();
      const tracker = { state: 'ok' as string | undefined, told: [] as string[], tell(s: string) { this.told.push(s); } };
      const service = { prepareImage: prepare, rebuildDevcontainer: rebuild, removeAll: async () => 0, engineState: tracker } as unknown as SandboxService;
      return { ui, tracker, commands: sandboxCommands(service, ui, recordingLogger()) };
    }

    it('Prepare and Rebuild show the person their words, with Show Log and Retry; a build failure only once (its own notice)', async () => {
      const untrusted = commandsOn(
        async () => {
          throw new ToolError('invalid_settings', 'The codeactSandbox.pythonPackages setting asks for packages, but the workspace is not trusted, so nothing is installed with network access for it. Ask the user to trust the workspace, or to remove the packages from that setting.');
        },
        async () => {
          throw new ToolError('invalid_settings', "The workspace folder is on another machine, and a Dev Container image is built only from a folder on the user's computer.");
        },
      );
      await untrusted.commands[COMMAND.prepareImage]();
      await untrusted.commands[COMMAND.rebuildDevcontainer]();
      assert.deepEqual(untrusted.ui.shown, [
        'error: CodeAct Sandbox: The codeactSandbox.pythonPackages setting asks for packages, but the workspace is not trusted, so nothing is installed with network access for it. Trust the workspace, or remove the packages from that setting. [Show Log -> codeactSandbox.showLog | Retry -> codeactSandbox.prepareImage]',
        "error: CodeAct Sandbox: The workspace folder is on another machine, and a Dev Container image is built only from a folder on your computer. [Show Log -> codeactSandbox.showLog | Retry -> codeactSandbox.rebuildDevcontainer]",
      ]);
      const built = commandsOn(
        async () => {
          throw new ImageBuildError('build_failed', 'model', 'Building the sandbox image failed.');
        },
        async () => undefined,
      );
      await built.commands[COMMAND.prepareImage]();
      assert.deepEqual(built.ui.shown, []);
      // The engine is the trouble: the engine's own notice, with its buttons.
      const down = commandsOn(
        async () => {
          throw new ToolError('engine_unreachable', 'Docker is not reachable, so the program was not run. Ask the user to start Docker.');
        },
        async () => undefined,
      );
      down.tracker.state = 'unreachable';
      await down.commands[COMMAND.prepareImage]();
      assert.deepEqual([down.ui.shown, down.tracker.told], [[], ['unreachable']]);
    });
  });

  describe('the view in a remote window', () => {
    it('Copy Path says the path is on the person\'s computer, not where the window\'s terminal runs', () => {
      assert.equal(
        copiedApartSentence('/home/me/.config/Code/User/workspaceStorage/x/runs/a/b/files/chart.png', 'ssh-remote'),
        'CodeAct Sandbox: copied /home/me/.config/Code/User/workspaceStorage/x/runs/a/b/files/chart.png, a path on your own computer, where CodeAct Sandbox keeps its files; this window\'s folder and terminal are on the ssh-remote side, where that path does not exist. Save to Workspace puts a copy in the workspace there.',
      );
    });

    it('a chat is labelled by its date and time by default, not a bare time', () => {
      const label = artifactItem(
        { kind: 'session', session: { sessionDigest: 'd', sessionLabel: 'chat 1', runCount: 1, latestRunId: 'r', latestStartedAt: '2025-01-02T02:59:00.000Z', firstStartedAt: '2025-01-02T02:59:00.000Z', firstProgram: 'print(1)' } },
        { filePath: () => '' },
      ).label;
      assert.ok(label.includes('2025'), label);
    });
  });

  describe("the manifest's words", () => {
    const nls = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../package.nls.json'), 'utf8')) as Record<string, string>;

    it('the tool and the extension say "no network unless you allow domains" and name Podman beside Docker (they said "hardened Docker sandbox (no network, ...")', () => {
      assert.equal(
        nls['tool.execute_code.userDescription'],
        'Runs a Python program in a hardened container sandbox on Docker or Podman (no network unless you allow domains, no access to your files except those it is given) and returns what it printed; files it produces are kept in the CodeAct Sandbox view.',
      );
      assert.match(nls.description!, /^Gives Copilot agent mode an execute_code tool that runs model-written Python in a hardened container sandbox on Docker or Podman: no network unless you allow domains,/);
    });

    it('confirmBeforeRun says what VS Code guarantees: the question until the tool is approved without asking (it said "Ask before each program runs")', () => {
      assert.match(nls['config.confirmBeforeRun.markdownDescription']!, /VS Code shows the question until you approve this tool without asking: Allow in this Session or Workspace, Always Allow, `#chat\.tools\.autoApprove#` \(Bypass Approvals\) or Autopilot; from then on programs run unasked\./);
    });

    it('the view: install links and no engine settings when there is no engine; no Prepare for a named image it cannot make', () => {
      for (const key of ['viewsWelcome.none.linux', 'viewsWelcome.none.mac', 'viewsWelcome.none.windows']) {
        assert.doesNotMatch(nls[key]!, /Open Engine Settings/, key);
        assert.match(nls[key]!, /\[Install (Docker Desktop|Docker Engine)\]\(https:\/\/docs\.docker\.com\//, key);
      }
      assert.doesNotMatch(nls['viewsWelcome.1']!, /Prepare/);
      assert.equal(nls['viewsWelcome.4'], undefined);
    });
  });
});
