import type { BackendChoice } from '../docker/backend';
import type { ProgressUpdate } from './ui';

/** The status bar item: which backend, why, which image, which engine. */
export function statusView(choice: BackendChoice, image: string, engineName: string | undefined): { text: string; tooltip: string } {
  return {
    text: `$(vm) Sandbox: ${choice.backend}`,
    tooltip: `**CodeAct Sandbox**\n\n${choice.reason}\n\nImage: \`${image}\`\n\nEngine: ${engineName ?? 'the local Docker engine'}`,
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
