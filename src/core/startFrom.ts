/**
 * `startFrom`: a chat begins from the state another chat had after one of its runs, which the
 * person chose in the view ("Start a New Chat from Here") and handed over in their message as a
 * token the store made. The other chat's kept runs up to that one are re-run in a new sandbox
 * of this chat; the call's record names that run (its `origin`) and the store keeps copies of
 * the re-run runs' records with it (storage/chatOrigins.ts), so this chat's chain goes on
 * through them (a resume or a rewind follows it there). The other chat is not changed.
 */
import { ToolError, describeError } from './errors';
import type { Logger } from './logger';
import { replayChain } from './replay';
import { WHY, replayedOn, stateChain, type ChatRun, type ResumeOutcome, type ResumeSource, type StateRun } from './resume';
import type { Sandbox } from './sandbox';

const WITHOUT = 'Call execute_code without `startFrom`';
const AGAIN = 'or ask the user to choose Start a New Chat from Here on the run again';

/**
 * How long a token is good for after it was made. The person's click puts it straight into a new
 * chat's input, and the model passes it on that chat's first call: minutes. Longer, a token
 * copied into a chat's history or a file would open the run's state to whatever read it later.
 */
export const START_TOKEN_MS = 15 * 60 * 1000;
export const START_TOKEN_LIFETIME = '15 minutes';

/** What a `startFrom` token names, as the store that made it reads it: the run, or why not (any more). */
export type StartTokenReading = { origin: ChatRun } | { refused: 'unknown' | 'expired' } | { refused: 'used'; by: string };

/**
 * The token a start is made with. A token starts one chat, once: it is taken as the other chat's
 * runs are about to run here (after every check), and given back when the start did not happen
 * after all (the replay was interrupted: the model is told to call again).
 */
export interface TokenUse {
  /** False when a chat took it first. */
  take(): boolean;
  giveBack(): void;
}

const USED_ELSEWHERE = `\`startFrom\` was used by another chat already: a token starts one chat, once. ${WITHOUT}, ${AGAIN}.`;

/** The model's sentence for a token the store does not take; `chat`: the chat (by store digest) the call is in. */
export function refusedTokenMessage(reading: Exclude<StartTokenReading, { origin: ChatRun }>, chat: string): string {
  switch (reading.refused) {
    case 'expired':
      return `\`startFrom\` has expired: a token is good for ${START_TOKEN_LIFETIME} after the user chose the run. ${WITHOUT}, ${AGAIN}.`;
    case 'used':
      return reading.by === chat
        ? `This chat already started from that state on an earlier call, and its state carried on from there. ${WITHOUT}.`
        : USED_ELSEWHERE;
    case 'unknown':
      return `\`startFrom\` is not a state the user offered: it must be the token from the user's message, copied exactly. ${WITHOUT}, ${AGAIN}.`;
  }
}

export async function startFromState(
  sandbox: Sandbox,
  source: ResumeSource | undefined,
  origin: ChatRun,
  token: TokenUse | undefined,
  timeoutMs: number,
  signal: AbortSignal,
  log: Logger,
): Promise<Extract<ResumeOutcome, { kind: 'started' | 'partial' | 'interrupted' }>> {
  const chatRuns = source?.chatRuns?.bind(source);
  if (!source || !chatRuns || !sandbox.renew) throw new ToolError('invalid_input', `This host cannot start a chat from another chat's state. ${WITHOUT}.`);
  let own: StateRun[];
  let theirs: StateRun[];
  try {
    [own, theirs] = await Promise.all([source.runs(), chatRuns(origin.chat)]);
  } catch (e) {
    log.warn(`startFrom: the records could not be read: ${describeError(e)}`);
    throw new ToolError('invalid_input', `The records of the state the user chose could not be read, so this chat cannot start from it. ${WITHOUT}, and tell the user.`, { cause: e });
  }
  // Taken once: a model that passes it again on a later call would throw away what the chat did since.
  if (own.some((r) => !r.otherChat && r.sealed && r.state.origin?.chat === origin.chat && r.state.origin.run === origin.run)) {
    throw new ToolError('invalid_input', `This chat already started from that state on an earlier call, and its state carried on from there. ${WITHOUT}.`);
  }
  const at = theirs.findIndex((r) => r.runId === origin.run);
  if (at < 0) {
    throw new ToolError(
      'invalid_input',
      `The run the user chose to start from is no longer recorded (its chat was deleted, or it was removed to keep within the storage budget). ${WITHOUT} (the chat starts from an empty state), and tell the user.`,
    );
  }
  const chain = stateChain(theirs.slice(0, at + 1));
  if (chain.kind === 'broken') {
    throw new ToolError('invalid_input', `This chat cannot start from the state the user chose, because its kept runs cannot be re-run: ${WHY[chain.why]}. ${WITHOUT}, and tell the user.`);
  }
  const runs = chain.kind === 'ok' ? chain.runs : [];
  // Taken at the last moment, so a call refused above leaves the token to the model's next try.
  if (token && !token.take()) throw new ToolError('invalid_input', USED_ELSEWHERE);
  let replay: Awaited<ReturnType<typeof replayChain>>;
  try {
    await sandbox.renew(signal, "the chat starts from another chat's state");
    replay = await replayChain(sandbox, source, runs, timeoutMs, signal, log);
  } catch (e) {
    token?.giveBack();
    throw e;
  }
  if (replay.kind === 'partial') return { ...replay, cause: 'startFrom', origin };
  if (replay.kind !== 'done') {
    // The chat did not start from it: the model is told to call again, with the same token.
    token?.giveBack();
    return replay;
  }
  return { kind: 'started', origin, runs: runs.length, ms: replay.ms, now: replay.now, recorded: chain.kind === 'ok' ? chain.target : '', notes: replay.notes, ...replayedOn(replay) };
}
