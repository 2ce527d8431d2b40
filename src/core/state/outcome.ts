/**
 * What a rebuild of a chat's state did (resume, rewind, startFrom), where its records come from,
 * and where a call asks to go: the shapes the rebuilds, the sentences and the report share.
 */
import type { NetworkActivity } from '../network';
import type { ChatRun, StateRun } from './chain';
import type { Replay, ReplayFiles } from './replay';

/** Where a host's records of a chat's runs come from, and how a replayed run's files are shared again. */
export interface ResumeSource extends ReplayFiles {
  /** The chat's session-mode runs, oldest first. */
  runs(): Promise<StateRun[]>;
  /** Another chat's, by its store digest (a chat started from its state); unset where no chat can. */
  chatRuns?(chat: string): Promise<StateRun[]>;
}

/** What the re-run runs did on the network (replay.ts): the call's record holds it with the call's own. */
export type Replayed = { network?: NetworkActivity };

export type ResumeOutcome =
  | { kind: 'none' }
  /**
   * `now`: the state's id in this sandbox; `recorded`: the id the records know it by; `older`:
   * the records end before the state this host last knew (the latest kept calls' records are gone).
   */
  | ({ kind: 'restored'; runs: number; ms: number; now: string; recorded: string; older: boolean; notes: string[] } & Replayed)
  /** The model's `rewind`: `back` kept calls undone, `runs` earlier ones re-run in a new sandbox. */
  | ({ kind: 'rewound'; back: number; byUser: boolean; runs: number; ms: number; now: string; recorded: string; notes: string[] } & Replayed)
  /** `startFrom`: the chat started from the state another chat had after its run `origin.run`, re-running `runs` of that chat's kept runs. */
  | ({ kind: 'started'; origin: ChatRun; runs: number; ms: number; now: string; recorded: string; notes: string[] } & Replayed)
  /**
   * `cause`: the sandbox had been removed, the call went back, or it started from another chat's
   * state (`origin`). `budgetMs`: the replay stopped at its time budget (replay.ts), not at a run that failed.
   */
  | ({ kind: 'partial'; cause: 'removed' | 'rewind' | 'startFrom'; origin?: ChatRun; replayed: number; of: number; failure: string; budgetMs?: number; ms: number; now: string; recorded: string; notes: string[] } & Replayed)
  /** The sandbox's state became unknown during the replay (cancel, the sandbox stopped): no program may run on it. */
  | ({ kind: 'interrupted'; why: string } & Replayed)
  | { kind: 'refused'; why: 'missing' | 'changed' | 'unrecorded' | 'unreadable' | 'long' };

/** How far back: `back` kept calls (the model's `rewind`), or to the state after a run the user chose in the view. */
export type RewindTarget = { back: number } | { afterRun: string } | { startFrom: ChatRun; token?: TokenUse };

export function replayedOn(replay: Replay): Replayed {
  return replay.network ? { network: replay.network } : {};
}

/** Past this many kept runs, a chat's state is not rebuilt by replay (it would hold its call for too long). */
export const MAX_REPLAYED_RUNS = 200;

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
