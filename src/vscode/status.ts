import { inlineCode, plainText } from '../core/markdown';
import type { BackendChoice } from '../docker';
import type { ProgressUpdate } from './ui';

/** What each runtime puts between a program and this machine, in the tooltip's words. */
const RUNTIME_BOUNDARY: Record<string, string> = {
  runsc: 'gVisor: a user-space kernel between programs and the host kernel',
  runc: 'a Linux container on the host kernel',
  crun: 'a Linux container on the host kernel',
};

/** The status bar item: which backend, why, which image, which engine, which runtime (once known). */
export function statusView(choice: BackendChoice, image: string, engineName: string | undefined, runtime?: string): { text: string; tooltip: string } {
  const boundary = runtime === undefined ? '' : `\n\nRuntime: ${runtime}${RUNTIME_BOUNDARY[runtime] ? ` (${RUNTIME_BOUNDARY[runtime]})` : ''}`;
  return {
    text: `$(vm) Sandbox: ${choice.backend}${runtime === 'runsc' ? ' (gVisor)' : ''}`,
    // The image and the engine's name come from settings and the engine: shown as they are, never as Markdown.
    tooltip: `**CodeAct Sandbox**\n\n${choice.reason}\n\nImage: ${inlineCode(image)}\n\nEngine: ${engineName === undefined ? 'the local Docker engine' : plainText(engineName)}${boundary}`,
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
    tooltip: '**CodeAct Sandbox**\n\nBuilding the sandbox image (once per Docker engine); the notification shows its progress and the output channel its log.',
  };
}
