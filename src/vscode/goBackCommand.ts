/**
 * The person's way back: "Go Back to This Run's State" on a run in the view. The run must be one
 * the chat's current state grew from (checked against the chain now, and again at the call); the
 * chat's next call then starts from the state after it, rebuilt in a new sandbox, and its result
 * says the user asked for it.
 */
import { callsAfter, stateChain } from '../core/resume';
import type { StateMode } from '../core/sessionState';
import type { ArtifactStore } from '../storage/artifactStore';
import type { ArtifactNode } from './artifactItems';
import type { CommandTable } from './commands';
import { COMMAND } from './ids';
import { ACTION, type Ui } from './ui';

export interface GoBackTarget {
  /** The chat (by its store digest) starts its next call from the state after `runId`. */
  goBackTo(sessionDigest: string, runId: string): void;
}

export function goBackCommands(store: ArtifactStore, target: GoBackTarget, ui: Ui, stateMode: () => StateMode): CommandTable<typeof COMMAND.goBackToRun> {
  return {
    [COMMAND.goBackToRun]: async (node?: ArtifactNode): Promise<{ back: number } | { why: string } | undefined> => {
      if (node?.kind !== 'run') return undefined;
      if (stateMode() !== 'session') {
        const why = 'going back needs session state, and the state setting is fresh';
        ui.showWarning(`CodeAct Sandbox: ${why[0]!.toUpperCase()}${why.slice(1)}.`, ACTION.openSetting('codeactSandbox.state'));
        return { why };
      }
      const where = callsAfter(stateChain(await store.stateRuns(node.sessionDigest)), node.record.runId);
      if ('why' in where) {
        ui.showWarning(`CodeAct Sandbox: this run's state cannot be gone back to: ${where.why}.`, ACTION.showLog);
        return where;
      }
      target.goBackTo(node.sessionDigest, node.record.runId);
      ui.showInfo(
        where.back === 0
          ? "The chat's next call starts from the state after this run, its last kept one: rebuilt in a new sandbox."
          : `The chat's next call starts from the state after this run, without the ${where.back} kept call${where.back === 1 ? '' : 's'} after it: rebuilt in a new sandbox.`,
      );
      return where;
    },
  };
}
