/**
 * A chat's state (session mode), one door. A call meets it at three moments: before anything runs
 * (stateBeforeCall: go back, start from another chat's state, or rebuild a state whose sandbox is
 * gone), before its program (stateBeforeProgram: a sandbox found gone only then), and after it
 * (stateAfterProgram: the line the model reads, the state its record keeps). The chain functions
 * are pure, for the view and the store; every sentence the model reads about state is in
 * sentences.ts. README.md draws the folder.
 */
export { rebuildFirst as stateBeforeCall, rebuildNow as stateBeforeProgram, replayNetwork, withoutNetwork, type RebuildCall, type SessionRequest } from './rebuild';
export { stateAfterProgram, type ProgramEnd } from './afterProgram';
export { callsAfter, stateChain, type Chain, type ChatRun, type StateRecord, type StateRun } from './chain';
export {
  MAX_REPLAYED_RUNS,
  START_TOKEN_LIFETIME,
  START_TOKEN_MS,
  type ResumeOutcome,
  type ResumeSource,
  type RewindTarget,
  type StartTokenReading,
  type TokenUse,
} from './outcome';
export { REPLAY_BUDGET_MS, replayChain } from './replay';
export { REFUSED, STATE_LINES, WHY, duration, plural, refusedTokenMessage, resumeSentence, startQuestion, unkeptClause } from './sentences';
export { STATE_MODES, SessionStates, type StateCall, type StateMode, type StateOutcome } from './states';
