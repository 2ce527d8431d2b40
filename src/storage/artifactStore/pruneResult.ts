import { plural } from '../../core/state';

/** A chat whose runs a prune deleted. */
export interface DroppedChat {
  chat: string;
  /** Its label, from its newest record when the prune began ('' when none could be read). */
  label: string;
  /** Its runs this prune deleted, in the order it deleted them. */
  runs: string[];
  /** Set when its state went (its chain, whole): how many of those runs were the chain's kept runs. */
  stateRuns?: number;
}

export interface PruneResult {
  deletedRuns: number;
  freedBytes: number;
  totalBytes: number;
  /** The chats it took runs or states from, in the order it took them. */
  chats: DroppedChat[];
}

const MB = 1024 * 1024;

/** The log's one sentence on what a prune deleted and whose; undefined when it deleted nothing. */
export function pruneSentence(result: PruneResult, budgetBytes: number): string | undefined {
  if (result.chats.length === 0) return undefined;
  const parts = result.chats.map((c) => {
    const name = c.label || `chat ${c.chat}`;
    if (c.stateRuns === undefined) return `${plural(c.runs.length, 'run')} of ${name}`;
    const others = c.runs.length - c.stateRuns;
    return `the state of ${name} with its ${plural(c.stateRuns, 'kept run')}${others > 0 ? ` and ${plural(others, 'other run')}` : ''}, so its next call starts from an empty state`;
  });
  return `Deleted ${plural(result.deletedRuns, 'stored run')} to stay within the storage budget of ${Number((budgetBytes / MB).toFixed(1))} MB: ${parts.join('; ')}.`;
}

/** Adds up what a prune deleted, and whose, as it deletes it. */
export class PruneTally {
  private readonly chats = new Map<string, DroppedChat>();
  private readonly result: Omit<PruneResult, 'chats'>;

  constructor(
    totalBytes: number,
    /** A chat's label, from the index as it was before the prune. */
    private readonly labelOf: (chat: string) => string,
  ) {
    this.result = { deletedRuns: 0, freedBytes: 0, totalBytes };
  }

  /** A run of `bytes` deleted (`gone`: another window deleted it first, so it freed nothing here); `ofState`: with its chat's state. */
  deleted(chat: string, runId: string, bytes: number, gone: boolean, ofState: boolean): void {
    this.result.totalBytes -= bytes;
    if (gone) return;
    this.result.freedBytes += bytes;
    this.result.deletedRuns++;
    const dropped = this.of(chat);
    dropped.runs.push(runId);
    if (ofState) dropped.stateRuns = (dropped.stateRuns ?? 0) + 1;
  }

  /** The chat's state went (its runs are counted as they are deleted). */
  stateLost(chat: string): void {
    this.of(chat).stateRuns ??= 0;
  }

  done(): PruneResult {
    return { ...this.result, chats: [...this.chats.values()] };
  }

  private of(chat: string): DroppedChat {
    let dropped = this.chats.get(chat);
    if (!dropped) this.chats.set(chat, (dropped = { chat, label: this.labelOf(chat), runs: [] }));
    return dropped;
  }
}
