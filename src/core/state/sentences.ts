/**
 * Every sentence the model reads about a chat's state, in one place: the line each session-mode
 * result ends with, what a rebuild (resume, rewind, startFrom) did, and why a call that asked for
 * one of them is refused. The logic around them decides which; it words none of them itself.
 */
import type { ChatRun } from './chain';
import { MAX_REPLAYED_RUNS, START_TOKEN_LIFETIME, type ResumeOutcome, type StartTokenReading } from './outcome';

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** A time budget in words: seconds under two minutes, else whole minutes. */
export function duration(ms: number): string {
  return ms < 120_000 ? seconds(ms) : `${Math.round(ms / 60_000)} minutes`;
}

/** Why a program that succeeded could not be kept, as the model is told it. */
const UNKEPT: Record<string, string> = {
  threads: 'it left threads running',
  processes: 'it left child processes running',
  sockets: 'it left sockets open',
  flush: 'its output could not be flushed',
  link: 'it closed its link to the sandbox',
  stop: 'its process could not be stopped between calls',
  gone: 'its process ended',
};

/** Why the process holding a state failed the sandbox's own check, as a clause. */
export const HOLDER_FAILED: Record<string, string> = {
  threads: 'it was running threads',
  processes: 'other processes were running',
  sockets: 'it held sockets open',
  stop: 'it could not be stopped',
  gone: 'it had ended',
  ran: 'it ran between calls, continued by something of its own',
};

/** Why a successful call's state was not kept, as a clause ("it left threads running"). */
export function unkeptClause(reason: string): string {
  return UNKEPT[reason] ?? `of ${reason}`;
}

export const STATE_LINES = {
  kept: 'State: kept for the next call.',
  unchanged: 'State: unchanged, because this call did not succeed; the next call starts from the state the last successful call left.',
  unchangedEmpty: 'State: unchanged, because this call did not succeed; the next call starts from an empty state.',
  unkept: (why: string) => `State: not kept, because ${why}; the next call starts from the state before this call.`,
  ended: 'State: lost, because the sandbox stopped while this call ran; the next call starts from an empty state.',
  lost: 'The earlier state was lost (the sandbox was removed or restarted), so this call started from an empty state.',
  dropped: "This chat's earlier state was deleted to keep the stored runs within the storage budget, so this call started from an empty state.",
  /** The process holding the state failed the sandbox's own check before this call's program started. */
  droppedBefore: (why: string) => `The earlier state was given up, because the process holding it failed the sandbox's check (${why}), so this call started from an empty state.`,
  /** ... or after a call that did not succeed, which would have left it the state. */
  droppedAfter: (why: string) =>
    `State: given up, because the process holding it failed the sandbox's check after this call (${why}); the next call starts from an empty state.`,
  unavailable:
    "State: not available to this call, because the sandbox's warm interpreter is not running; it ran as a fresh program and nothing was kept.",
} as const;

export const WHY: Record<Extract<ResumeOutcome, { kind: 'refused' }>['why'], string> = {
  missing: 'the record of one of them is missing (deleted, or removed to keep within the storage budget)',
  changed: 'the record of one of them was changed, or was not written for this chat',
  unrecorded: 'they ran before this version recorded how each state follows from the one before',
  unreadable: "this chat's records could not be read",
  long: `there are more than ${MAX_REPLAYED_RUNS} of them`,
};

const PARTIAL: Record<Extract<ResumeOutcome, { kind: 'partial' }>['cause'], string> = {
  removed: "This chat's sandbox had been removed; re-running",
  rewind: 'Going back, re-running',
  startFrom: "Starting from the state another chat had after one of its runs, as the user asked, re-running",
};

/** The sentence the model is told, before the call's own state line. */
export function resumeSentence(outcome: ResumeOutcome): string | undefined {
  switch (outcome.kind) {
    case 'none':
      return undefined;
    case 'restored':
      return (
        `State: restored before this call by re-running this chat's ${plural(outcome.runs, 'kept run')} in order (${seconds(outcome.ms)}), because its sandbox had been removed` +
        (outcome.older ? "; it is an earlier state than the chat's last one, whose latest kept calls' records are gone. " : '. ') +
        'Values computed from time, randomness, the network or workspace files that changed since may differ from before; files those runs wrote were written again.'
      );
    case 'rewound':
      return (
        `State: went back ${plural(outcome.back, 'kept call')} before this call${outcome.byUser ? ', as the user asked in the CodeAct Sandbox view' : ''}, in a new sandbox` +
        (outcome.runs === 0
          ? ', to an empty state.'
          : `, by re-running this chat's ${plural(outcome.runs, 'earlier kept run')} in order (${seconds(outcome.ms)}). ` +
            'Values computed from time, randomness, the network or workspace files that changed since may differ from before.')
      );
    case 'started':
      return (
        "State: started from the state another chat had after one of its runs, as the user asked in the CodeAct Sandbox view, in a new sandbox" +
        (outcome.runs === 0
          ? ': that state was empty.'
          : `, by re-running that chat's ${plural(outcome.runs, 'kept run')} in order (${seconds(outcome.ms)}). ` +
            'Values computed from time, randomness, the network or workspace files that changed since may differ from that chat; files those runs wrote were written again. Later calls of this chat do not change the other chat.')
      );
    case 'partial': {
      const whose = outcome.cause === 'startFrom' ? "that chat's" : 'its';
      const stopped =
        outcome.budgetMs !== undefined
          ? `${whose} ${plural(outcome.of, 'kept run')} did not finish within the ${duration(outcome.budgetMs)} a rebuild may take (${outcome.replayed} ran), `
          : `${whose} kept run ${outcome.replayed + 1} of ${outcome.of} failed (${outcome.failure}), `;
      return (
        `State: partly restored. ${PARTIAL[outcome.cause]} ${stopped}` +
        `so this call started from ${outcome.replayed === 0 ? 'an empty state' : `the state after run ${outcome.replayed}`}. Re-create what is missing, or start over with reset.`
      );
    }
    case 'interrupted':
      return undefined;
    case 'refused':
      return `State: not restored. This chat's sandbox had been removed, and its kept runs were not re-run because ${WHY[outcome.why]}; this call started from an empty state.`;
  }
}

/** Told when the model's `reset` or `rewind` overrode the run the user chose to go back to (it could not know of it). */
export function setAsideSentence(by: 'reset' | 'rewind' | 'startFrom'): string {
  return `The user had chosen, in the CodeAct Sandbox view, to go back to the state after an earlier run; this call's \`${by}\` came first, so that was not done. Tell the user, who can choose it again.`;
}

export function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

const WITHOUT = 'Call execute_code without `startFrom`';
const AGAIN = 'or ask the user to choose Start a New Chat from Here on the run again';

const USED_ELSEWHERE = `\`startFrom\` was used by another chat already: a token starts one chat, once. ${WITHOUT}, ${AGAIN}.`;

/** The model's sentence for a token the store does not take; `chat`: the chat (by store digest) the call is in. */
export function refusedTokenMessage(reading: Exclude<StartTokenReading, { origin: ChatRun }>, chat: string): string {
  switch (reading.refused) {
    case 'expired':
      return `\`startFrom\` has expired: a token is good for ${START_TOKEN_LIFETIME} after the user chose the run. ${WITHOUT}, ${AGAIN}.`;
    case 'used':
      return reading.by === chat ? REFUSED.startedAlready : USED_ELSEWHERE;
    case 'unknown':
      return `\`startFrom\` is not a state the user offered: it must be the token from the user's message, copied exactly. ${WITHOUT}, ${AGAIN}.`;
  }
}

/** Why a call that asked to go back or to start from another chat's state is refused (each names the way on). */
export const REFUSED = {
  rewindWithReset: '`rewind` and `reset` go different ways: pass `reset`: true for an empty state, or `rewind` to go back to an earlier one.',
  rewindWithoutSession: 'The user has not turned on session state, so there is no earlier state to go back to. Call execute_code without `rewind`.',
  rewindUnrecorded: "This host keeps no record of the chat's runs, so it cannot go back. Call execute_code without `rewind`.",
  rewindUnreadable: "This chat's records could not be read, so it cannot go back. Call execute_code without `rewind`.",
  rewindBroken: (why: string) => `This chat cannot go back, because ${why}. Call execute_code without \`rewind\`, or with \`reset\`: true.`,
  choiceGone: (why: string) => `The user asked to go back to the state after an earlier run, but ${why}. Call again: the call runs on the chat's current state.`,
  nothingKept: "This chat's state holds no kept calls to go back over. Call execute_code without `rewind`.",
  rewindTooFar: (kept: number) =>
    `This chat's state holds ${plural(kept, 'kept call')}, so \`rewind\` can be at most ${kept}. Call again with a smaller \`rewind\`, or with \`reset\`: true for an empty state.`,
  startWithOthers: '`startFrom` starts this chat from the state the user chose: pass it without `reset` or `rewind`.',
  startWithoutSession:
    "The user has not turned on session state, so this chat cannot start from another chat's state. Call execute_code without `startFrom`, and tell the user that starting from another chat's state needs the codeactSandbox.state setting at session.",
  startHere: `This host cannot start a chat from another chat's state. ${WITHOUT}.`,
  startUnreadable: `The records of the state the user chose could not be read, so this chat cannot start from it. ${WITHOUT}, and tell the user.`,
  startedAlready: `This chat already started from that state on an earlier call, and its state carried on from there. ${WITHOUT}.`,
  startGone: `The run the user chose to start from is no longer recorded (its chat was deleted, or it was removed to keep within the storage budget). ${WITHOUT} (the chat starts from an empty state), and tell the user.`,
  startBroken: (why: string) => `This chat cannot start from the state the user chose, because its kept runs cannot be re-run: ${why}. ${WITHOUT}, and tell the user.`,
  startUsedElsewhere: USED_ELSEWHERE,
  startDeclined: `The user did not agree to start this chat from another chat's state, so nothing ran. ${WITHOUT}, and tell the user.`,
  cancelledFirst: 'The run was cancelled before it started.',
  rebuildStopped: (why: string) => `Rebuilding this chat's state stopped because ${why}, so the program was not run; the next call rebuilds it in a new sandbox. Call again.`,
} as const;

/**
 * The project's own question before another chat's state comes into this one (plain text: a
 * dialog's). `run`: when the chosen run ran; `runs`: how many kept programs run again first
 * (undefined when the records cannot tell).
 */
export function startQuestion(run: string, runs: number | undefined): string {
  const again = runs === undefined ? "that chat's kept programs run again first" : runs === 0 ? 'its state was empty' : `that chat's ${plural(runs, 'kept program')} run again first`;
  return (
    `Start this chat from the state another chat had after its run of ${run}? In a new sandbox of this chat, ${again}, ` +
    'with the workspace files as they are now and the allow-list of today. The other chat is not changed.'
  );
}
