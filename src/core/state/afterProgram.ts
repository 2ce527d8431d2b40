/**
 * The third moment of a session call's state: after its program. What the model is told of the
 * state (after the call's own notes, so every session-mode result ends with the state line), and
 * the state as the call's record keeps it (ids the records know, and where a chat started).
 */
import type { StateRecord } from './chain';
import type { ResumeOutcome } from './outcome';
import type { SessionRequest } from './rebuild';
import { resumeSentence, setAsideSentence } from './sentences';
import type { SessionStates, StateOutcome } from './states';

export interface ProgramEnd {
  /** Exit 0 and not stopped (timeout, Stop, flood, OOM, the sandbox replaced): only then can its state be kept. */
  succeeded: boolean;
  /** The runner's report; undefined when the program did not run through the runner. */
  outcome: StateOutcome | undefined;
}

export function stateAfterProgram(state: SessionRequest, sessionKey: string, resumed: ResumeOutcome, end: ProgramEnd): { notes: string[]; record: StateRecord } {
  const notes: string[] = [];
  if ('notes' in resumed) notes.push(...resumed.notes);
  const rebuilt = resumeSentence(resumed);
  if (rebuilt) notes.push(rebuilt);
  if (state.userChoiceSetAside) notes.push(setAsideSentence(state.userChoiceSetAside));
  notes.push(state.states.settle(sessionKey, { reset: state.reset, succeeded: end.succeeded, outcome: end.outcome }));
  return { notes, record: { ...recordOf(state.reset, end.outcome, state.states, sessionKey), ...originOf(resumed) } };
}

/** The call's state for its record: a state rebuilt here is named by the id its records know. */
function recordOf(reset: boolean, outcome: StateOutcome | undefined, states: SessionStates, sessionKey: string): StateRecord {
  if (!outcome) return { reset, kept: false };
  const recorded = (id: string) => states.recorded(sessionKey, id);
  return {
    reset,
    kept: outcome.kept,
    from: recorded(outcome.from),
    now: recorded(outcome.now),
    ...(outcome.ended ? { ended: true } : {}),
  };
}

/** A call that started from another chat's state names the run it started after: this chat's chain goes on there. */
function originOf(resumed: ResumeOutcome): Pick<StateRecord, 'origin'> {
  return (resumed.kind === 'started' || resumed.kind === 'partial') && resumed.origin ? { origin: resumed.origin } : {};
}
