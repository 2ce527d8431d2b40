/**
 * Session mode: the chat's state rebuilt before a call's program, in a sandbox that holds none
 * (new, replaced, found gone), gone back to an earlier one (the model's `rewind`, the run the
 * person chose), or started from another chat's (`startFrom`). Once per sandbox; a chat's other calls wait for it (SessionStates). The replay
 * has its own time limits (replay.ts); the program's start after. Which runs: chain.ts; the sentences:
 * sentences.ts.
 */
import { ToolError, describeError } from '../errors';
import type { Logger } from '../logger';
import { connectionLine, networkSummary, type NetworkActivity } from '../network';
import type { Sandbox } from '../sandbox';
import type { ResumeOutcome, ResumeSource, RewindTarget } from './outcome';
import { resumeState, rewindState } from './resume';
import { REFUSED } from './sentences';
import { startFromState } from './startFrom';
import type { SessionStates } from './states';

/**
 * A session-mode call's state: `states` is the host's record of the chats' states, `resume` its
 * records to rebuild from. `rewind`: go back first (the model's input, or a run the user chose),
 * in a new sandbox; `userChoiceSetAside`: the user's choice was overridden by the model's `reset`
 * or `rewind`.
 */
export interface SessionRequest {
  reset: boolean;
  states: SessionStates;
  resume?: ResumeSource;
  rewind?: RewindTarget;
  userChoiceSetAside?: 'reset' | 'rewind' | 'startFrom';
}

/** The call a rebuild belongs to: its chat, its time limit (each re-run's), its stop and its log. */
export interface RebuildCall {
  sessionKey: string;
  timeoutMs: number;
  signal: AbortSignal;
  log: Logger;
}

/** Before the program: going back when asked, else a rebuild when the sandbox holds no state. */
export async function rebuildFirst(sandbox: Sandbox, state: SessionRequest, call: RebuildCall): Promise<ResumeOutcome> {
  return state.rewind ? rewindIn(sandbox, state, call) : resumeIfGone(sandbox, state, call);
}

async function resumeIfGone(sandbox: Sandbox, state: SessionRequest, call: RebuildCall): Promise<ResumeOutcome> {
  if (!state.resume || state.reset) return { kind: 'none' };
  // Another call of the chat rebuilding now: this one runs after, on what it rebuilt.
  await state.states.quiet(call.sessionKey);
  if (!(await sandbox.holdsNoState?.(call.signal))) return { kind: 'none' };
  return rebuildNow(sandbox, state, call);
}

async function rewindIn(sandbox: Sandbox, state: SessionRequest, call: RebuildCall): Promise<ResumeOutcome> {
  await state.states.quiet(call.sessionKey);
  const target = state.rewind!;
  return state.states.rebuilding(call.sessionKey, async () =>
    settleRebuild(
      sandbox,
      state,
      call,
      'startFrom' in target
        ? await startFromState(sandbox, state.resume, target.startFrom, target.token, call.timeoutMs, call.signal, call.log)
        : await rewindState(sandbox, state.resume, target, call.timeoutMs, call.signal, call.log),
    ),
  );
}

/** A rebuild in this sandbox, unless one was tried in it already: also as the program starts, when the sandbox is found gone only then. */
export async function rebuildNow(sandbox: Sandbox, state: SessionRequest, call: RebuildCall): Promise<ResumeOutcome> {
  if (!state.resume || state.reset || !state.states.firstTryIn(call.sessionKey, sandbox.id)) return { kind: 'none' };
  const resume = state.resume;
  return state.states.rebuilding(call.sessionKey, async () =>
    settleRebuild(sandbox, state, call, await resumeState(sandbox, resume, state.states.expectedOf(call.sessionKey), call.timeoutMs, call.signal, call.log)),
  );
}

/**
 * What the host keeps of a rebuild: the state it reached (and its recorded id), or, when the
 * sandbox's state became unknown, no state at all: that sandbox goes, the next call rebuilds in a
 * new one, and this call's program does not run.
 */
async function settleRebuild(sandbox: Sandbox, state: SessionRequest, { sessionKey: key, log }: RebuildCall, outcome: ResumeOutcome): Promise<ResumeOutcome> {
  const states = state.states;
  switch (outcome.kind) {
    case 'none':
      return outcome;
    case 'refused':
      // The call's sentence tells what became of the earlier state: the state line adds no loss of its own.
      states.adopt(key, '');
      return outcome;
    case 'interrupted': {
      // No record is written for a call that does not run: what the replay reached is logged.
      if (outcome.network) log.warn(`resume: the interrupted replay's ${networkSummary(outcome.network)}`);
      for (const c of outcome.network?.connections ?? []) log.warn(`resume: the interrupted replay's connection: ${connectionLine(c)}`);
      states.forgetRebuild(key);
      await sandbox.renew?.(new AbortController().signal, 'its state was rebuilt only in part').catch((e: unknown) => log.warn(`could not replace a half-rebuilt sandbox: ${describeError(e)}`));
      if (outcome.why === 'the call was cancelled') throw new ToolError('cancelled', REFUSED.cancelledFirst);
      throw new ToolError('sandbox_failed', REFUSED.rebuildStopped(outcome.why));
    }
    default:
      states.rebuilt(key, sandbox.id, outcome.now, outcome.recorded);
      return outcome;
  }
}

/** The connections of the runs re-run to rebuild the state: the call's record holds them before its program's. */
export function replayNetwork(resumed: ResumeOutcome): NetworkActivity | undefined {
  return 'network' in resumed ? resumed.network : undefined;
}

/** The rebuild as the report keeps it: its connections are in the call's own record. */
export function withoutNetwork(resumed: Exclude<ResumeOutcome, { kind: 'none' }>): Exclude<ResumeOutcome, { kind: 'none' }> {
  if (!('network' in resumed)) return resumed;
  const rest = { ...resumed };
  delete rest.network;
  return rest;
}
