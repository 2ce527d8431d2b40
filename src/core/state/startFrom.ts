/**
 * `startFrom`: a chat begins from the state another chat had after one of its runs, which the
 * person chose in the view ("Start a New Chat from Here") and handed over in their message as a
 * token the store made. The other chat's kept runs up to that one are re-run in a new sandbox
 * of this chat; the call's record names that run (its `origin`) and the store keeps copies of
 * the re-run runs' records with it (storage/chatOrigins.ts), so this chat's chain goes on
 * through them (a resume or a rewind follows it there). The other chat is not changed.
 */
import { ToolError, describeError } from '../errors';
import type { Logger } from '../logger';
import type { Sandbox } from '../sandbox';
import { stateChain, type ChatRun, type StateRun } from './chain';
import { replayedOn, type ResumeOutcome, type ResumeSource, type TokenUse } from './outcome';
import { replayChain } from './replay';
import { REFUSED, WHY } from './sentences';

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
  if (!source || !chatRuns || !sandbox.renew) throw new ToolError('invalid_input', REFUSED.startHere);
  let own: StateRun[];
  let theirs: StateRun[];
  try {
    [own, theirs] = await Promise.all([source.runs(), chatRuns(origin.chat)]);
  } catch (e) {
    log.warn(`startFrom: the records could not be read: ${describeError(e)}`);
    throw new ToolError('invalid_input', REFUSED.startUnreadable, { cause: e });
  }
  // Taken once: a model that passes it again on a later call would throw away what the chat did since.
  if (own.some((r) => !r.otherChat && r.sealed && r.state.origin?.chat === origin.chat && r.state.origin.run === origin.run)) {
    throw new ToolError('invalid_input', REFUSED.startedAlready);
  }
  const at = theirs.findIndex((r) => r.runId === origin.run);
  if (at < 0) {
    throw new ToolError('invalid_input', REFUSED.startGone);
  }
  const chain = stateChain(theirs.slice(0, at + 1));
  if (chain.kind === 'broken') {
    throw new ToolError('invalid_input', REFUSED.startBroken(WHY[chain.why]));
  }
  const runs = chain.kind === 'ok' ? chain.runs : [];
  // Taken at the last moment, so a call refused above leaves the token to the model's next try.
  if (token && !token.take()) throw new ToolError('invalid_input', REFUSED.startUsedElsewhere);
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
