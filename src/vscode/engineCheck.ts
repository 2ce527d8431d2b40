/**
 * Asking the engine whether it answers, and what the person and the model are told when it does
 * not: the state (engineState.ts), a Podman that answers where Podman's tools look while Docker
 * does not, and which engine answered (Docker or Podman, for the status item). The service
 * (sandboxService.ts) hands in the client of the engine the settings name now.
 */
import type Dockerode from 'dockerode';
import { ToolError, describeError } from '../core/errors';
import type { Logger } from '../core/logger';
import { checkEngineIdentity, engineStateOf, findPodman, type EngineIdentity, type EngineState, type EngineTarget, type PodmanFound } from '../docker';
import { EngineStateTracker, noEngineModelSentence } from './engineState';

export interface EngineCheckDeps {
  log: Logger;
  tracker: EngineStateTracker;
  platform: NodeJS.Platform;
  /** Whether a docker or podman command is installed here (a missing socket without one is no engine at all). */
  cliFound: () => boolean;
  /** Where Podman's tools look, and whether one answers there (tests pass a fake). */
  findPodman?: () => Promise<PodmanFound | undefined>;
}

/** How long a Podman found (or not) is believed: a person who starts one and presses Retry is heard. */
const PODMAN_LOOK_MS = 5_000;

export class EngineCheck {
  /** The engine that last answered (Docker or Podman), for the status item. */
  identity: EngineIdentity | undefined;
  private podmanLook: { at: number; found: Promise<PodmanFound | undefined> } | undefined;

  constructor(private readonly deps: EngineCheckDeps) {}

  /** Asks the engine now; the state it is in afterwards. `engine` throws when the settings name no valid engine. */
  async check(engine: () => { docker: Dockerode; target: EngineTarget | undefined }): Promise<EngineState> {
    let target: EngineTarget | undefined;
    try {
      const current = engine();
      target = current.target;
      this.identity = await checkEngineIdentity(current.docker);
      this.deps.tracker.set('ok');
      return 'ok';
    } catch (e) {
      await this.failed(e, target, true);
      return this.deps.tracker.state ?? 'unreachable';
    }
  }

  /** The engine answered a call: its name for the status item, asked once per client. */
  answered(identity: EngineIdentity): void {
    this.identity = identity;
    this.deps.tracker.set('ok');
  }

  /**
   * A failure that says something about the engine sets its state; `always`: any other failure
   * counts as unreachable. Returns the model's sentence when it must say more than the engine
   * layer's (no engine at all: install one; a Podman that answers: use it), so the model and the
   * person get the same advice.
   */
  async failed(e: unknown, target: EngineTarget | undefined, always = false): Promise<ToolError | undefined> {
    const local = target === undefined || target.protocol === 'unix' || target.protocol === 'npipe';
    const state = engineStateOf(e, { local, cliFound: this.deps.cliFound() }) ?? (always ? 'unreachable' : undefined);
    if (state === undefined) return undefined;
    // Only when nothing named the engine: a person who named one meant that one.
    const podman = target?.source === 'default' ? await this.lookForPodman() : undefined;
    this.deps.log.warn(`container engine: ${state} (${describeError(e)})${podman ? `; ${podman.identity.label} answers at ${podman.candidate.address} (${podman.candidate.why})` : ''}`);
    this.deps.tracker.set(state, podman ? { label: podman.identity.label, setting: podman.candidate.setting } : undefined);
    if (podman) {
      return new ToolError(
        'engine_unreachable',
        `Docker does not answer on the user's computer, but Podman does (${podman.identity.label}), so the program was not run. Ask the user to choose Use Podman in the CodeAct Sandbox view, or to start Docker, then try again.`,
        { cause: e },
      );
    }
    if (state === 'none') return new ToolError('engine_unreachable', noEngineModelSentence(this.deps.platform), { cause: e });
    return undefined;
  }

  /** The Podman found lately, looked for again after a few seconds. */
  private lookForPodman(): Promise<PodmanFound | undefined> {
    const now = Date.now();
    if (!this.podmanLook || now - this.podmanLook.at > PODMAN_LOOK_MS) {
      this.podmanLook = { at: now, found: (this.deps.findPodman ?? (() => findPodman()))().catch(() => undefined) };
    }
    return this.podmanLook.found;
  }

  /** The Podman to use (Use Podman): looked for now. */
  async podman(): Promise<PodmanFound | undefined> {
    this.podmanLook = undefined;
    return this.lookForPodman();
  }
}
