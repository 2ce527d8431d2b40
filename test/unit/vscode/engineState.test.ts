import * as assert from 'node:assert/strict';
import { ENGINE_NOTICE_DISMISSED, EngineStateTracker, engineSentence, type EngineStateEffects } from '../../../src/vscode/engineState';
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
    showStatus: (state: EngineState) => void seen.push(`status ${state}`),
  };
}

describe('the engine state a person sees (unit)', function () {
  it('sets the context key and the status item for each state, and notifies once per window', async function () {
    const fx = effects();
    const tracker = new EngineStateTracker(fx, new FakeState());
    tracker.set('unreachable');
    tracker.set('unreachable');
    tracker.set('ok');
    tracker.set('denied');
    assert.deepEqual(fx.seen, [
      'context codeactSandbox.engineState=unreachable',
      'status unreachable',
      `notify CodeAct Sandbox: ${engineSentence('unreachable')} [Retry | Open Engine Settings | Show Log | Don't Show Again]`,
      'context codeactSandbox.engineState=ok',
      'status ok',
      // Already told in this window: the view and the status item say it from here on.
      'context codeactSandbox.engineState=denied',
      'status denied',
    ]);
  });

  it('acts on each button of the notice, and "Don\'t Show Again" holds for later windows', async function () {
    const expected: Record<string, string | undefined> = {
      Retry: 'command codeactSandbox.checkEngine',
      'Open Engine Settings': 'command workbench.action.openSettings codeactSandbox.docker',
      'Show Log': 'command codeactSandbox.showLog',
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
    assert.deepEqual(later.seen, ['context codeactSandbox.engineState=unreachable', 'status unreachable']);
  });

  it('says what to do in each state, and names no setting that does not exist', function () {
    assert.equal(
      engineSentence('denied'),
      "This user may not use the container engine's socket (permission denied). On Linux, add yourself to the docker group (sudo usermod -aG docker $USER, then log out and in again), or point the engine settings at an engine you may use, such as rootless Docker or Podman.",
    );
    assert.equal(engineSentence('none'), 'No container engine was found on this machine, so Copilot cannot run programs in a sandbox. Install Docker Desktop, Docker Engine or Podman, then retry.');
  });
});
