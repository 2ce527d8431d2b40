import * as assert from 'node:assert/strict';
import {
  ENGINE_NOTICE_DISMISSED,
  EngineStateTracker,
  IMAGE_MISSING_SENTENCE,
  engineActions,
  engineSentence,
  engineStatusView,
  noEngineModelSentence,
  type EngineAdvice,
  type EngineStateEffects,
} from '../../../src/vscode/engineState';
import type { EngineState } from '../../../src/docker';
import { FakeState } from './fakes';

/** Effects that record what a person would see, and answer a notification with `answer`. */
function effects(answer?: string): EngineStateEffects & { seen: string[]; answered: Promise<void> } {
  const seen: string[] = [];
  let done!: () => void;
  const answered = new Promise<void>((r) => (done = r));
  return {
    seen,
    answered,
    // A time (the walkthrough's keys) shows as <time>.
    setContext: (key, value) => void seen.push(`context ${key}=${typeof value === 'number' ? '<time>' : String(value)}`),
    notify: async (message, ...items) => {
      seen.push(`notify ${message} [${items.join(' | ')}]`);
      setImmediate(done);
      return answer;
    },
    executeCommand: (command, ...args) => void seen.push(`command ${[command, ...args].join(' ')}`),
    openLink: (url) => void seen.push(`link ${url}`),
    showStatus: (state: EngineState) => void seen.push(`status ${state}`),
  };
}

const LINUX: EngineAdvice = { platform: 'linux', place: { kind: 'local', apart: false } };
const PODMAN = { label: 'Podman 4.3.1', setting: 'unix://$XDG_RUNTIME_DIR/podman/podman.sock' };

describe('the engine state a person sees (unit)', function () {
  it('sets the context keys and the status item for each state, and notifies once per window', async function () {
    const fx = effects();
    const tracker = new EngineStateTracker(fx, new FakeState());
    tracker.set('unreachable');
    tracker.set('unreachable');
    tracker.set('ok');
    tracker.set('denied');
    assert.deepEqual(fx.seen, [
      'context codeactSandbox.window=local',
      'context codeactSandbox.podmanFound=false',
      'context codeactSandbox.engineState=unreachable',
      'status unreachable',
      `notify CodeAct Sandbox: ${engineSentence('unreachable')} [Retry | Open Engine Settings | Show Log | Don't Show Again]`,
      'context codeactSandbox.podmanFound=false',
      'context codeactSandbox.engineState=ok',
      'status ok',
      // Already told in this window: the view and the status item say it from here on.
      'context codeactSandbox.podmanFound=false',
      'context codeactSandbox.engineState=denied',
      'status denied',
    ]);
  });

  it('acts on each button of the notice, and "Don\'t Show Again" holds for later windows', async function () {
    const expected: Record<string, string | undefined> = {
      Retry: 'command codeactSandbox.checkEngine',
      'Open Engine Settings': 'command workbench.action.openSettings codeactSandbox.docker',
      'Show Log': 'command codeactSandbox.showLog',
      'Install Docker Engine': 'link https://docs.docker.com/engine/install/',
      'Install Podman': 'link https://podman.io/docs/installation',
    };
    for (const [button, command] of Object.entries(expected)) {
      const fx = effects(button);
      new EngineStateTracker(fx, new FakeState()).set('none');
      await fx.answered;
      assert.equal(fx.seen.at(-1), command, button);
    }
    const memory = new FakeState();
    const fx = effects("Don't Show Again");
    new EngineStateTracker(fx, memory).set('denied');
    await fx.answered;
    assert.equal(memory.get(ENGINE_NOTICE_DISMISSED), true);
    const later = effects();
    new EngineStateTracker(later, memory).set('unreachable');
    assert.deepEqual(later.seen, ['context codeactSandbox.window=local', 'context codeactSandbox.podmanFound=false', 'context codeactSandbox.engineState=unreachable', 'status unreachable']);
  });

  it('says what to do in each state, and names no setting that does not exist', function () {
    assert.equal(
      engineSentence('denied'),
      "This user may not use the container engine's socket (permission denied). On Linux, add yourself to the docker group (sudo usermod -aG docker $USER, then log out and in again), or point the engine settings at an engine you may use, such as rootless Docker or Podman.",
    );
  });

  it('no engine at all: install links per platform, not "Open Engine Settings", and the model hears the same (install, not start)', function () {
    // Was: "No container engine was found on this machine, ... Install Docker Desktop, Docker Engine or Podman, then retry." with Open Engine Settings.
    assert.equal(engineSentence('none', LINUX), 'No container engine is installed on this computer, so Copilot cannot run programs in a sandbox. Install Docker Engine or Podman, start it, then retry.');
    assert.equal(
      engineSentence('none', { ...LINUX, platform: 'darwin' }),
      'No container engine is installed on this computer, so Copilot cannot run programs in a sandbox. Install Docker Desktop or Podman Desktop, start it, then retry.',
    );
    assert.deepEqual(engineActions('none', LINUX), ['Retry', 'Install Docker Engine', 'Install Podman', 'Show Log']);
    assert.deepEqual(engineActions('none', { ...LINUX, platform: 'win32' }), ['Retry', 'Install Docker Desktop', 'Install Podman Desktop', 'Show Log']);
    assert.equal(
      noEngineModelSentence('darwin'),
      "No container engine is installed on the user's computer, so the program was not run. Ask the user to install Docker Desktop or Podman Desktop (the CodeAct Sandbox view links to both), then try again.",
    );
  });

  it('a Podman that answers while Docker does not: says so, offers Use Podman first, and the status item names it', async function () {
    const fx = effects('Use Podman');
    const tracker = new EngineStateTracker(fx, new FakeState());
    tracker.set('unreachable', PODMAN);
    await fx.answered;
    const sentence = 'Docker does not answer on this computer, but Podman does (Podman 4.3.1 at unix://$XDG_RUNTIME_DIR/podman/podman.sock). Use Podman, or start Docker, then retry.';
    assert.equal(engineSentence('unreachable', tracker.advice), sentence);
    assert.deepEqual(fx.seen, [
      'context codeactSandbox.window=local',
      'context codeactSandbox.podmanFound=true',
      'context codeactSandbox.engineState=unreachable',
      'status unreachable',
      `notify CodeAct Sandbox: ${sentence} [Use Podman | Retry | Open Engine Settings | Show Log | Don't Show Again]`,
      'command codeactSandbox.usePodman',
    ]);
    assert.equal(engineStatusView('unreachable', tracker.advice).text, '$(warning) Sandbox: Docker not answering, Podman found');
    // Podman in use: the offer is over.
    tracker.set('ok');
    assert.equal(tracker.advice.podman, undefined);
  });

  it('a remote window whose extension runs on the person\'s computer: says where it looks, and offers the remote\'s engine', function () {
    const ssh: EngineAdvice = { platform: 'darwin', place: { kind: 'ssh', apart: true, remoteName: 'ssh-remote', sshHost: 'build-box' } };
    assert.equal(
      engineSentence('unreachable', ssh),
      'The container engine is not running or cannot be reached, so Copilot cannot run programs in a sandbox yet. Start Docker Desktop, the docker service or Podman, or check the engine settings, then retry. This window is connected to build-box, but CodeAct Sandbox runs on your own computer and looks for the engine here; to use the engine on the SSH host, use it over SSH.',
    );
    assert.deepEqual(engineActions('unreachable', ssh), ['Use the Engine on the SSH Host', 'Retry', 'Open Engine Settings', 'Show Log']);
    const codespace: EngineAdvice = { platform: 'linux', place: { kind: 'codespaces', apart: true, remoteName: 'codespaces' } };
    assert.deepEqual(engineActions('none', codespace), ['Add Docker in Docker', 'Run CodeAct Sandbox There', 'Retry', 'Install Docker Engine', 'Install Podman', 'Show Log']);
    assert.deepEqual(engineActions('unreachable', { platform: 'win32', place: { kind: 'wsl', apart: true, remoteName: 'wsl' } }), ['Run CodeAct Sandbox There', 'Retry', 'Open Engine Settings', 'Show Log']);
    // The extension next to the workspace (moved there, or a browser window): the advice is a local window's.
    assert.equal(engineSentence('unreachable', { platform: 'linux', place: { kind: 'ssh', apart: false, remoteName: 'ssh-remote' } }), engineSentence('unreachable'));
  });

  it('a person who asks is told the state every time, with its buttons, but no "Don\'t Show Again"', async function () {
    const fx = effects();
    const tracker = new EngineStateTracker(fx, new FakeState());
    tracker.set('denied');
    tracker.tell('denied');
    await fx.answered;
    assert.equal(fx.seen.at(-1), `notify CodeAct Sandbox: ${engineSentence('denied')} [Retry | Open Engine Settings | Show Log]`);
  });

  it('an image the engine lacks: what can help, not "prepare the image" (Prepare builds the data image only)', function () {
    assert.equal(
      IMAGE_MISSING_SENTENCE,
      'The image named in codeactSandbox.image is not on the container engine and could not be pulled, so Copilot cannot run programs in a sandbox. Pull it on the engine, choose an image the engine has, or clear the setting to use the data image (built on your engine), then ask again.',
    );
  });
});
