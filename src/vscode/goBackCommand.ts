/**
 * The person's ways to an earlier run's state, from the run in the view:
 * - "Go Back to This Run's State": the run must be one the chat's current state grew from
 *   (checked against the chain now, and again at the call); the chat's next call then starts from
 *   the state after it, rebuilt in a new sandbox, and its result says the user asked for it.
 * - "Start a New Chat from Here": a new agent chat opens with a message in its input that hands
 *   the model a token for the run (made by the store's key, good for minutes and for one chat:
 *   storage/startTokens.ts); the model passes it as `startFrom` and the new chat's first call
 *   starts from that state (core/state/startFrom.ts), which the person confirms first. The run's chat
 *   is not changed.
 */
import { callsAfter, START_TOKEN_LIFETIME, stateChain, WHY, type StateMode } from '../core/state';
import type { ArtifactStore } from '../storage/artifactStore';
import type { ArtifactNode } from './artifactItems';
import type { CommandTable } from './commands';
import { COMMAND } from './ids';
import { ACTION, type Ui } from './ui';

export interface GoBackTarget {
  /** The chat (by its store digest) starts its next call from the state after `runId`. */
  goBackTo(sessionDigest: string, runId: string): void;
}

/** The message a new chat starts with: for the person to read and add to, and for the model to act on. */
export function startFromMessage(token: string, startedAt: string): string {
  // In local time, as the view labels the run.
  return `Continue from the CodeAct Sandbox state an earlier chat had after its run of ${new Date(startedAt).toLocaleString()}: on your first execute_code call, pass "startFrom": "${token}" (good for one chat, within ${START_TOKEN_LIFETIME}). `;
}

export function goBackCommands(store: ArtifactStore, target: GoBackTarget, ui: Ui, stateMode: () => StateMode): CommandTable<typeof COMMAND.goBackToRun | typeof COMMAND.startChatFromRun> {
  const needsSession = (what: string): { why: string } | undefined => {
    if (stateMode() === 'session') return undefined;
    const why = `${what} needs session state, and the state setting is fresh`;
    ui.showWarning(`CodeAct Sandbox: ${why[0]!.toUpperCase()}${why.slice(1)}.`, ACTION.openSetting('codeactSandbox.state'));
    return { why };
  };
  return {
    [COMMAND.goBackToRun]: async (node?: ArtifactNode): Promise<{ back: number } | { why: string } | undefined> => {
      if (node?.kind !== 'run') return undefined;
      const off = needsSession('going back');
      if (off) return off;
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
    [COMMAND.startChatFromRun]: async (node?: ArtifactNode): Promise<{ message: string } | { why: string } | undefined> => {
      if (node?.kind !== 'run') return undefined;
      const off = needsSession("starting a chat from a run's state");
      if (off) return off;
      // Checked now so the person hears of a state that cannot be rebuilt here, not from the model.
      const runs = await store.stateRuns(node.sessionDigest);
      const at = runs.findIndex((r) => r.runId === node.record.runId);
      const chain = at < 0 ? undefined : stateChain(runs.slice(0, at + 1));
      const why =
        !chain || !node.record.state?.kept
          ? 'it did not keep a session state'
          : chain.kind === 'broken'
            ? `its earlier kept runs cannot be re-run: ${WHY[chain.why]}`
            : undefined;
      if (why) {
        ui.showWarning(`CodeAct Sandbox: a new chat cannot start from this run's state: ${why}.`, ACTION.showLog);
        return { why };
      }
      const message = startFromMessage(store.startToken(node.sessionDigest, node.record.runId), node.record.startedAt);
      await ui.openNewChat(message);
      return { message };
    },
  };
}
