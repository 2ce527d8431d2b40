/**
 * Session mode's resume: when a chat's sandbox is gone (idle removal, a restart, an engine
 * restart, a crash), its next call rebuilds the state by re-running the chat's kept runs in
 * order, in the directories they first ran in. Which runs those are is decided from the records
 * alone: each kept run names the state it started from and the one it left, so the chain from
 * an empty state to the last one is followed link by link, and a missing or changed link stops
 * the resume with a sentence instead of restoring something different.
 *
 * Which runs: chain.ts; what the model is told: sentences.ts. The records come from the host's
 * store through ResumeSource.
 */
import { ToolError, describeError } from '../errors';
import type { Logger } from '../logger';
import type { Sandbox } from '../sandbox';
import { callsAfter, stateChain, type Chain, type ChatRun } from './chain';
import { replayedOn, type ResumeOutcome, type ResumeSource, type RewindTarget } from './outcome';
import { replayChain } from './replay';
import { REFUSED, WHY } from './sentences';

/**
 * Rebuilds the chat's state in a sandbox that holds none, by re-running the chain. `expected`: the
 * state this host last knew the chat to have (by its recorded id), when it knows one.
 */
export async function resumeState(sandbox: Sandbox, source: ResumeSource, expected: string | undefined, timeoutMs: number, signal: AbortSignal, log: Logger): Promise<ResumeOutcome> {
  let chain: Chain;
  try {
    chain = stateChain(await source.runs());
  } catch (e) {
    log.warn(`resume: the chat's records could not be read: ${describeError(e)}`);
    return { kind: 'refused', why: 'unreadable' };
  }
  if (chain.kind === 'none') return chain;
  if (chain.kind === 'broken') return { kind: 'refused', why: chain.why };
  const replay = await replayChain(sandbox, source, chain.runs, timeoutMs, signal, log);
  if (replay.kind !== 'done') return replay.kind === 'partial' ? { ...replay, cause: 'removed' } : replay;
  const older = expected !== undefined && expected !== '' && expected !== chain.target;
  return { kind: 'restored', runs: chain.runs.length, ms: replay.ms, now: replay.now, recorded: chain.target, older, notes: replay.notes, ...replayedOn(replay) };
}

/**
 * Goes back to an earlier state of the chat: the chain up to that point is checked first (a call
 * that cannot go back is refused before anything runs), then the session's sandbox is replaced by
 * a new one and the earlier runs are re-run in it.
 */
export async function rewindState(
  sandbox: Sandbox,
  source: ResumeSource | undefined,
  target: Exclude<RewindTarget, { startFrom: ChatRun }>,
  timeoutMs: number,
  signal: AbortSignal,
  log: Logger,
): Promise<Extract<ResumeOutcome, { kind: 'rewound' | 'partial' | 'interrupted' }>> {
  if (!source || !sandbox.renew) throw new ToolError('invalid_input', REFUSED.rewindUnrecorded);
  let chain: Chain;
  try {
    chain = stateChain(await source.runs());
  } catch (e) {
    throw new ToolError('invalid_input', REFUSED.rewindUnreadable, { cause: e });
  }
  if (chain.kind === 'broken') throw new ToolError('invalid_input', REFUSED.rewindBroken(WHY[chain.why]));
  const kept = chain.kind === 'ok' ? chain.runs : [];
  let back: number;
  if ('afterRun' in target) {
    const after = callsAfter(chain, target.afterRun);
    if ('why' in after) {
      throw new ToolError('invalid_input', REFUSED.choiceGone(after.why));
    }
    back = after.back;
  } else back = target.back;
  if (kept.length === 0) throw new ToolError('invalid_input', REFUSED.nothingKept);
  if (back > kept.length) {
    throw new ToolError('invalid_input', REFUSED.rewindTooFar(kept.length));
  }
  const runs = kept.slice(0, kept.length - back);
  await sandbox.renew(signal, 'the chat goes back to an earlier state');
  const replay = await replayChain(sandbox, source, runs, timeoutMs, signal, log);
  if (replay.kind !== 'done') return replay.kind === 'partial' ? { ...replay, cause: 'rewind' } : replay;
  return { kind: 'rewound', back, byUser: 'afterRun' in target, runs: runs.length, ms: replay.ms, now: replay.now, recorded: runs.at(-1)?.state.now ?? '', notes: replay.notes, ...replayedOn(replay) };
}
