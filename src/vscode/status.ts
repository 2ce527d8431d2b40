import { inlineCode, plainText } from '../core/markdown';
import type { BackendChoice, EngineIdentity, EngineTarget } from '../docker';
import type { ProgressUpdate } from './ui';

/** What each runtime puts between a program and this machine, in the tooltip's words. */
const RUNTIME_BOUNDARY: Record<string, string> = {
  runsc: 'gVisor: a user-space kernel between programs and the host kernel',
  runc: 'a Linux container on the host kernel',
  crun: 'a Linux container on the host kernel',
};

/** The engine as the status item and the Retry answer name it: what it is, once it said, and where. */
export interface EngineView {
  /** "Docker", "Podman", or "the engine" before it answered. */
  word: string;
  /** "Podman 4.3.1 at unix:///run/podman/podman.sock (setting codeactSandbox.dockerHost)". */
  line: string;
}

/** Names the engine as it named itself (a Podman service is never "Docker"), at the address it was found at. */
export function engineView(target: Pick<EngineTarget, 'url' | 'protocol' | 'reason'> | undefined, identity: Pick<EngineIdentity, 'kind' | 'label'> | undefined): EngineView {
  const address = target ? target.url || (target.protocol === 'npipe' ? 'the default pipe' : 'the default socket') : undefined;
  const name = identity?.label ?? 'The container engine';
  return {
    word: identity ? (identity.kind === 'podman' ? 'Podman' : 'Docker') : 'engine',
    line: `${name}${address ? ` at ${address} (${target!.reason})` : ''}`,
  };
}

/** The status bar item: which engine, which backend and why, which image, which runtime (once known). */
export function statusView(s: { choice?: BackendChoice; image?: string; engine: EngineView; runtime?: string }): { text: string; tooltip: string } {
  const { choice, image, runtime } = s;
  const boundary = runtime === undefined ? '' : `\n\nRuntime: ${runtime}${RUNTIME_BOUNDARY[runtime] ? ` (${RUNTIME_BOUNDARY[runtime]})` : ''}`;
  const devcontainer = choice?.backend === 'devcontainer' ? ', Dev Container image' : '';
  return {
    text: `$(vm) Sandbox: ${s.engine.word}${devcontainer}${runtime === 'runsc' ? ' (gVisor)' : ''}`,
    // The image and the engine's name come from settings and the engine: shown as they are, never as Markdown.
    tooltip: `**CodeAct Sandbox**\n\n${choice ? `${choice.reason}\n\n` : ''}Image: ${image ? inlineCode(image) : "chosen at a chat's first call"}\n\nEngine: ${plainText(s.engine.line)}${boundary}`,
  };
}

/**
 * Turns pull progress (a message and the fraction done, when known) into the increments a
 * progress notification adds up; a fraction that goes back (a new layer) adds nothing.
 */
export function pullProgress(report: (update: ProgressUpdate) => void): (message: string, fraction?: number) => void {
  let last = 0;
  return (message, fraction) => {
    if (fraction === undefined) return report({ message });
    const increment = Math.max(0, fraction * 100 - last);
    last = fraction * 100;
    report({ message, increment });
  };
}

/** While this window builds the sandbox image (the first use, or the Prepare command). */
export function buildingView(): { text: string; tooltip: string } {
  return {
    text: '$(sync~spin) Sandbox: building sandbox image',
    tooltip: '**CodeAct Sandbox**\n\nBuilding the sandbox image (once per engine); the notification shows its progress and the output channel its log.',
  };
}
