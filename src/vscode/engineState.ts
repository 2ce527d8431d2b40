/**
 * The engine's state as a person sees it, before any chat fails: a context key the view's welcome
 * content reads (a sentence and buttons per state), a warning form of the status item, and one
 * notification per window (with "Don't Show Again"). Set at activation, after each engine
 * failure, and after each call that reached the engine. Logic only: the effects are the Ui's.
 */
import type { EngineState } from '../docker';
import { COMMAND, CONFIG_SECTION } from './ids';
import type { WorkspaceState } from './ui';

export const ENGINE_STATE_CONTEXT = 'codeactSandbox.engineState';
/*
 * The walkthrough's steps complete on these keys, each set to the time of its event (a person's
 * act: a check asked for, a Prepare, a call), so each new event changes the key. VS Code 1.139
 * checks a step off when its key changes to a match, but not for a key that already matched when
 * its walkthrough was first opened (seen in the host test): so the check a window makes on its own
 * at activation does not set the engine's.
 */
/** When the engine last answered a check the person asked for, or a call. */
export const ENGINE_ANSWERED_CONTEXT = 'codeactSandbox.engineAnswered';
/** When the sandbox image was last found ready (Prepare, or a call that got a sandbox). */
export const IMAGE_READY_CONTEXT = 'codeactSandbox.imageReady';
/** When a chat's call last got a sandbox in this window. */
export const HAS_RUN_CONTEXT = 'codeactSandbox.hasRun';
/**
 * 'missing' after a chat's call could not have its sandbox image (not on the engine, and the pull
 * failed); 'ok' again once a call gets a sandbox. The view's welcome content reads it.
 */
export const IMAGE_STATE_CONTEXT = 'codeactSandbox.imageState';
/** What the person is told when the image is missing (the view and the notification say the same). */
export const IMAGE_MISSING_SENTENCE =
  'The sandbox image is not on the container engine and could not be pulled, so Copilot cannot run programs in a sandbox. Choose an image the engine has, or prepare the image, then ask again.';
/** Kept across windows (globalState): the person asked not to be told again. */
export const ENGINE_NOTICE_DISMISSED = 'codeactSandbox.engineNoticeDismissed';

export const ENGINE_ACTION = {
  retry: 'Retry',
  settings: 'Open Engine Settings',
  log: 'Show Log',
  never: "Don't Show Again",
} as const;

/** What the person is told for each state but ok: what is wrong, and what to do. */
export function engineSentence(state: Exclude<EngineState, 'ok'>): string {
  switch (state) {
    case 'unreachable':
      return 'The container engine is not running or cannot be reached, so Copilot cannot run programs in a sandbox yet. Start Docker Desktop, the docker service or Podman, or check the engine settings, then retry.';
    case 'denied':
      return "This user may not use the container engine's socket (permission denied). On Linux, add yourself to the docker group (sudo usermod -aG docker $USER, then log out and in again), or point the engine settings at an engine you may use, such as rootless Docker or Podman.";
    case 'none':
      return 'No container engine was found on this machine, so Copilot cannot run programs in a sandbox. Install Docker Desktop, Docker Engine or Podman, then retry.';
  }
}

/** The status item's warning form. */
export function engineStatusView(state: Exclude<EngineState, 'ok'>): { text: string; tooltip: string } {
  const short = { unreachable: 'engine not reachable', denied: 'engine access denied', none: 'no engine' }[state];
  return { text: `$(warning) Sandbox: ${short}`, tooltip: `**CodeAct Sandbox**\n\n${engineSentence(state)}\n\nClick to check again.` };
}

export interface EngineStateEffects {
  setContext(key: string, value: unknown): void;
  /** A non-modal warning with buttons; the one chosen, or undefined. */
  notify(message: string, ...items: string[]): Promise<string | undefined>;
  executeCommand(command: string, ...args: unknown[]): void;
  /** The status item shows the state (a warning) or goes back to its usual form. */
  showStatus(state: EngineState): void;
}

export class EngineStateTracker {
  private current: EngineState | undefined;
  private noticed = false;

  constructor(
    private readonly effects: EngineStateEffects,
    /** globalState: a dismissal holds for every window. */
    private readonly memory: WorkspaceState,
  ) {}

  get state(): EngineState | undefined {
    return this.current;
  }

  set(state: EngineState): void {
    if (state === this.current) return;
    this.current = state;
    this.effects.setContext(ENGINE_STATE_CONTEXT, state);
    this.effects.showStatus(state);
    if (state === 'ok' || this.noticed || this.memory.get<boolean>(ENGINE_NOTICE_DISMISSED) === true) return;
    // Once per window: a person who saw it knows; the view and the status item keep saying it.
    this.noticed = true;
    void this.effects
      .notify(`CodeAct Sandbox: ${engineSentence(state)}`, ENGINE_ACTION.retry, ENGINE_ACTION.settings, ENGINE_ACTION.log, ENGINE_ACTION.never)
      .then((choice) => this.act(choice));
  }

  private act(choice: string | undefined): void {
    switch (choice) {
      case ENGINE_ACTION.retry:
        return this.effects.executeCommand(COMMAND.checkEngine);
      case ENGINE_ACTION.settings:
        return this.effects.executeCommand('workbench.action.openSettings', `${CONFIG_SECTION}.docker`);
      case ENGINE_ACTION.log:
        return this.effects.executeCommand(COMMAND.showLog);
      case ENGINE_ACTION.never:
        void this.memory.update(ENGINE_NOTICE_DISMISSED, true);
        return;
    }
  }
}
