/**
 * The engine's state as a person sees it, before any chat fails: a context key the view's welcome
 * content reads (a sentence and buttons per state), a warning form of the status item, and one
 * notification per window (with "Don't Show Again"). Set at activation, after each engine
 * failure, and after each call that reached the engine. Logic only: the effects are the Ui's.
 */
import type { EngineState } from '../docker';
import { COMMAND, CONFIG_SECTION } from './ids';
import type { WorkspaceState } from './ui';
import type { WindowPlace } from './windowPlace';

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
  'The image named in codeactSandbox.image is not on the container engine and could not be pulled, so Copilot cannot run programs in a sandbox. Pull it on the engine, choose an image the engine has, or clear the setting to use the data image (built on your engine), then ask again.';
/** Kept across windows (globalState): the person asked not to be told again. */
export const ENGINE_NOTICE_DISMISSED = 'codeactSandbox.engineNoticeDismissed';

export const ENGINE_ACTION = {
  retry: 'Retry',
  settings: 'Open Engine Settings',
  log: 'Show Log',
  never: "Don't Show Again",
  usePodman: 'Use Podman',
  useSshEngine: 'Use the Engine on the SSH Host',
  runThere: 'Run CodeAct Sandbox There',
  dockerInDocker: 'Add Docker in Docker',
} as const;

/** Context keys the view's welcome content reads beside the state: a Podman that answers, and the kind of window. */
export const PODMAN_FOUND_CONTEXT = 'codeactSandbox.podmanFound';
/** 'local' when the extension runs where the workspace is; else the kind of remote window (windowPlace.ts). */
export const WINDOW_CONTEXT = 'codeactSandbox.window';

/** The docker-in-docker Dev Container feature: a codespace has an engine only with it. */
export const DOCKER_IN_DOCKER_URL = 'https://github.com/devcontainers/features/tree/main/src/docker-in-docker';

/** What, besides the state, decides the advice: the platform, the kind of window, a Podman that answers. */
export interface EngineAdvice {
  platform: NodeJS.Platform;
  place: WindowPlace;
  /** A Podman service that answers where Podman's tools look, while the engine looked for does not. */
  podman?: { label: string; setting: string };
}

const LOCAL_LINUX: EngineAdvice = { platform: 'linux', place: { kind: 'local', apart: false } };

/** Where to get an engine on each platform (as Container Tools links them): the button's title and the page. */
export function installLinks(platform: NodeJS.Platform): { title: string; url: string }[] {
  switch (platform) {
    case 'darwin':
      return [
        { title: 'Install Docker Desktop', url: 'https://docs.docker.com/desktop/setup/install/mac-install/' },
        { title: 'Install Podman Desktop', url: 'https://podman-desktop.io/docs/installation/macos-install' },
      ];
    case 'win32':
      return [
        { title: 'Install Docker Desktop', url: 'https://docs.docker.com/desktop/setup/install/windows-install/' },
        { title: 'Install Podman Desktop', url: 'https://podman-desktop.io/docs/installation/windows-install' },
      ];
    default:
      return [
        { title: 'Install Docker Engine', url: 'https://docs.docker.com/engine/install/' },
        { title: 'Install Podman', url: 'https://podman.io/docs/installation' },
      ];
  }
}

/** "Docker Desktop or Podman Desktop", "Docker Engine or Podman": what installLinks offers, in words. */
function installWords(platform: NodeJS.Platform): string {
  return installLinks(platform)
    .map((l) => l.title.replace(/^Install /, ''))
    .join(' or ');
}

/** The model's sentence when no engine is installed: the same advice the person gets (install, not start). */
export function noEngineModelSentence(platform: NodeJS.Platform): string {
  return `No container engine is installed on the user's computer, so the program was not run. Ask the user to install ${installWords(platform)} (the CodeAct Sandbox view links to both), then try again.`;
}

/** What the person is told for each state but ok: what is wrong, and what to do. */
export function engineSentence(state: Exclude<EngineState, 'ok'>, advice: EngineAdvice = LOCAL_LINUX): string {
  return `${stateSentence(state, advice)}${windowSentence(advice.place)}`;
}

function stateSentence(state: Exclude<EngineState, 'ok'>, advice: EngineAdvice): string {
  if (advice.podman) {
    return `Docker does not answer on this computer, but Podman does (${advice.podman.label} at ${advice.podman.setting}). Use Podman, or start Docker, then retry.`;
  }
  switch (state) {
    case 'unreachable':
      return 'The container engine is not running or cannot be reached, so Copilot cannot run programs in a sandbox yet. Start Docker Desktop, the docker service or Podman, or check the engine settings, then retry.';
    case 'denied':
      return "This user may not use the container engine's socket (permission denied). On Linux, add yourself to the docker group (sudo usermod -aG docker $USER, then log out and in again), or point the engine settings at an engine you may use, such as rootless Docker or Podman.";
    case 'none':
      return `No container engine is installed on this computer, so Copilot cannot run programs in a sandbox. Install ${installWords(advice.platform)}, start it, then retry.`;
  }
}

/** What a remote window adds: where the extension runs, and how to reach the remote's engine. */
function windowSentence(place: WindowPlace): string {
  if (!place.apart) return '';
  switch (place.kind) {
    case 'ssh':
      return ` This window is connected to ${place.sshHost ?? 'an SSH host'}, but CodeAct Sandbox runs on your own computer and looks for the engine here; to use the engine on the SSH host, use it over SSH.`;
    case 'wsl':
      return ' This window is connected to WSL, but CodeAct Sandbox runs on Windows: Docker Desktop answers both; an engine installed only inside WSL is reached by running CodeAct Sandbox there.';
    case 'devcontainer':
      return ' This window is attached to a Dev Container; CodeAct Sandbox runs on your own computer and uses the engine that runs that container.';
    case 'codespaces':
      return ' This window is connected to a codespace, but CodeAct Sandbox runs on your own computer; a codespace has an engine only with the docker-in-docker feature, and CodeAct Sandbox must then run in the codespace.';
    default:
      return ` This window is connected to ${place.remoteName ?? 'another machine'}, but CodeAct Sandbox runs on your own computer and looks for the engine here.`;
  }
}

/** The notification's buttons, most useful first. */
export function engineActions(state: Exclude<EngineState, 'ok'>, advice: EngineAdvice): string[] {
  const first: string[] = [];
  if (advice.podman) first.push(ENGINE_ACTION.usePodman);
  if (advice.place.apart && advice.place.kind === 'ssh') first.push(ENGINE_ACTION.useSshEngine);
  if (advice.place.apart && advice.place.kind === 'codespaces') first.push(ENGINE_ACTION.dockerInDocker);
  if (advice.place.apart && (advice.place.kind === 'wsl' || advice.place.kind === 'codespaces')) first.push(ENGINE_ACTION.runThere);
  // No engine at all: where to get one, not settings that cannot help.
  const middle = state === 'none' && !advice.podman ? installLinks(advice.platform).map((l) => l.title) : [ENGINE_ACTION.settings];
  return [...first, ENGINE_ACTION.retry, ...middle, ENGINE_ACTION.log];
}

/** The status item's warning form. */
export function engineStatusView(state: Exclude<EngineState, 'ok'>, advice: EngineAdvice = LOCAL_LINUX): { text: string; tooltip: string } {
  const short = advice.podman ? 'Docker not answering, Podman found' : { unreachable: 'engine not reachable', denied: 'engine access denied', none: 'no engine' }[state];
  return { text: `$(warning) Sandbox: ${short}`, tooltip: `**CodeAct Sandbox**\n\n${engineSentence(state, advice)}\n\nClick to check again.` };
}

export interface EngineStateEffects {
  setContext(key: string, value: unknown): void;
  /** A non-modal warning with buttons; the one chosen, or undefined. */
  notify(message: string, ...items: string[]): Promise<string | undefined>;
  executeCommand(command: string, ...args: unknown[]): void;
  /** Opens a page in the browser (install links, the docker-in-docker feature). */
  openLink(url: string): void;
  /** The status item shows the state (a warning) or goes back to its usual form. */
  showStatus(state: EngineState): void;
}

export class EngineStateTracker {
  private current: EngineState | undefined;
  private currentAdvice: EngineAdvice;
  private noticed = false;

  constructor(
    private readonly effects: EngineStateEffects,
    /** globalState: a dismissal holds for every window. */
    private readonly memory: WorkspaceState,
    advice: EngineAdvice = LOCAL_LINUX,
  ) {
    this.currentAdvice = advice;
    this.effects.setContext(WINDOW_CONTEXT, advice.place.apart ? advice.place.kind : 'local');
  }

  get state(): EngineState | undefined {
    return this.current;
  }

  get advice(): EngineAdvice {
    return this.currentAdvice;
  }

  /** The state after a check or a call; `podman`: a Podman that answers while the engine looked for does not. */
  set(state: EngineState, podman?: EngineAdvice['podman']): void {
    const offered = state === 'ok' ? undefined : podman;
    const changed = state !== this.current || offered?.setting !== this.currentAdvice.podman?.setting;
    if (!changed) return;
    this.current = state;
    this.currentAdvice = { platform: this.currentAdvice.platform, place: this.currentAdvice.place, ...(offered ? { podman: offered } : {}) };
    this.effects.setContext(PODMAN_FOUND_CONTEXT, offered !== undefined);
    this.effects.setContext(ENGINE_STATE_CONTEXT, state);
    this.effects.showStatus(state);
    if (state === 'ok' || this.noticed || this.memory.get<boolean>(ENGINE_NOTICE_DISMISSED) === true) return;
    // Once per window: a person who saw it knows; the view and the status item keep saying it.
    this.noticed = true;
    this.tell(state, true);
  }

  /** Says the state now, with its buttons: the window's one notice, or the answer to a check the person asked for. */
  tell(state: Exclude<EngineState, 'ok'>, notice = false): void {
    const items = engineActions(state, this.currentAdvice);
    void this.effects
      .notify(`CodeAct Sandbox: ${engineSentence(state, this.currentAdvice)}`, ...items, ...(notice ? [ENGINE_ACTION.never] : []))
      .then((choice) => this.act(choice));
  }

  private act(choice: string | undefined): void {
    const link = installLinks(this.currentAdvice.platform).find((l) => l.title === choice);
    if (link) return this.effects.openLink(link.url);
    switch (choice) {
      case ENGINE_ACTION.retry:
        return this.effects.executeCommand(COMMAND.checkEngine);
      case ENGINE_ACTION.settings:
        return this.effects.executeCommand('workbench.action.openSettings', `${CONFIG_SECTION}.docker`);
      case ENGINE_ACTION.log:
        return this.effects.executeCommand(COMMAND.showLog);
      case ENGINE_ACTION.usePodman:
        return this.effects.executeCommand(COMMAND.usePodman);
      case ENGINE_ACTION.useSshEngine:
        return this.effects.executeCommand(COMMAND.useSshEngine);
      case ENGINE_ACTION.runThere:
        return this.effects.executeCommand(COMMAND.runThere);
      case ENGINE_ACTION.dockerInDocker:
        return this.effects.openLink(DOCKER_IN_DOCKER_URL);
      case ENGINE_ACTION.never:
        void this.memory.update(ENGINE_NOTICE_DISMISSED, true);
        return;
    }
  }
}
