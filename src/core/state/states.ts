/**
 * Session mode's state between calls, as the host sees it: which state each chat's next call
 * should start from, and the one line every session-mode result ends with. Pure logic; the
 * sandbox reports what its runner did (StateOutcome), this decides what the model is told
 * (in the words of sentences.ts).
 */
import { HOLDER_FAILED, STATE_LINES, unkeptClause } from './sentences';

/** `fresh`: a new process per call (the default); `session`: module globals carry over between a chat's calls. */
export type StateMode = 'fresh' | 'session';
export const STATE_MODES: readonly StateMode[] = ['fresh', 'session'];

/** What a session call did to its sandbox's state (the runner's report). */
export interface StateOutcome {
  /** The state the program started from ('' : empty). */
  from: string;
  /** The state the next call starts from ('' : empty). */
  now: string;
  /** This call's state was kept. */
  kept: boolean;
  /** Why a call that exited 0 could not be kept (threads, processes, sockets, ...). */
  reason?: string;
  /** The state was given up: the process holding it failed the sandbox's own check (threads, processes, sockets, ...). */
  dropped?: string;
  /** The sandbox stopped or was restarted while the program ran: the state went with it. */
  ended?: boolean;
}


export interface StateCall {
  /** The call asked for an empty state. */
  reset: boolean;
  /** Exit 0 and not stopped (timeout, Stop, flood, OOM): only then can its state be kept. */
  succeeded: boolean;
  /** The runner's report; undefined when the program did not run through the runner (docker exec). */
  outcome: StateOutcome | undefined;
}

/**
 * The states of every chat of one host (a VS Code window, an MCP server, a CLI process): the state
 * each chat's last call left, so that a state that vanished with its sandbox (idle, replaced,
 * settings changed, restarted) is reported at the chat's next call instead of silently missing.
 */
export class SessionStates {
  private readonly expected = new Map<string, string>();
  /** The sandbox each chat's state was last rebuilt in (or tried): one try per sandbox. */
  private readonly rebuiltIn = new Map<string, string>();
  /** A rebuilt state's id in its sandbox, and the id the records know it by (a resume's or a rewind's). */
  private readonly aliases = new Map<string, { here: string; recorded: string }>();
  /** A rebuild under way, which the chat's other calls wait for (their programs must not run between its runs). */
  private readonly inFlight = new Map<string, Promise<unknown>>();
  /**
   * Chats whose kept runs the storage budget deleted: their state can no longer be rebuilt or gone
   * back in, so their next call starts from an empty state (a new chain), and says why.
   */
  private readonly dropped = new Set<string>();

  /** The chats this host knows a state of. */
  chats(): string[] {
    return [...this.expected.keys()];
  }

  /** The storage budget deleted the chat's state (its kept runs): its next call starts from an empty state. */
  dropState(sessionKey: string): void {
    this.dropped.add(sessionKey);
  }

  /** Whether the chat's next call must start from an empty state, because its state was deleted. */
  stateDropped(sessionKey: string): boolean {
    return this.dropped.has(sessionKey);
  }

  /** The id the records know a state by: a rebuilt state's own id is mapped back, for as long as its sandbox holds it. */
  recorded(sessionKey: string, id: string): string {
    const alias = this.aliases.get(sessionKey);
    return alias && id === alias.here && id !== '' ? alias.recorded : id;
  }

  /** The state this host last knew the chat to have, by its recorded id; undefined when it knows none. */
  expectedOf(sessionKey: string): string | undefined {
    const id = this.expected.get(sessionKey);
    return id === undefined ? undefined : this.recorded(sessionKey, id);
  }

  /** A state rebuilt in a new sandbox: `here` is its id there, `recorded` the records' id for it. */
  rebuilt(sessionKey: string, sandboxId: string, here: string, recorded: string): void {
    this.rebuiltIn.set(sessionKey, sandboxId);
    this.adopt(sessionKey, here);
    if (here) this.aliases.set(sessionKey, { here, recorded });
  }

  /** Rebuilding stopped half way: the next sandbox of the chat tries again, from what the records say. */
  forgetRebuild(sessionKey: string): void {
    this.rebuiltIn.delete(sessionKey);
    this.expected.delete(sessionKey);
  }

  /** Runs `rebuild` as the chat's one rebuild under way. */
  async rebuilding<T>(sessionKey: string, rebuild: () => Promise<T>): Promise<T> {
    const running = rebuild();
    this.inFlight.set(sessionKey, running.catch(() => undefined));
    try {
      return await running;
    } finally {
      if (this.inFlight.get(sessionKey) !== undefined) this.inFlight.delete(sessionKey);
    }
  }

  /** Resolves once no rebuild of the chat is under way. */
  async quiet(sessionKey: string): Promise<void> {
    for (let running = this.inFlight.get(sessionKey); running; running = this.inFlight.get(sessionKey)) await running;
  }

  /** Whether a rebuild of the chat's state was done (or tried) in this sandbox already: it is not tried there again. */
  triedIn(sessionKey: string, sandboxId: string): boolean {
    return this.rebuiltIn.get(sessionKey) === sandboxId;
  }

  /** True the first time it is asked for this chat and sandbox: a state is rebuilt (resume) at most once in each. */
  firstTryIn(sessionKey: string, sandboxId: string): boolean {
    if (this.rebuiltIn.get(sessionKey) === sandboxId) return false;
    this.rebuiltIn.set(sessionKey, sandboxId);
    return true;
  }

  /** A state rebuilt in a new sandbox (resume) is the one the chat's next call is expected to start from. */
  adopt(sessionKey: string, now: string): void {
    if (now) this.expected.set(sessionKey, now);
    else this.expected.delete(sessionKey);
  }

  /** Records the call's outcome and returns the line its result ends with. */
  settle(sessionKey: string, call: StateCall): string {
    const before = this.expected.get(sessionKey);
    // Taken by the call that ran: from an empty state (said so below), or another way (going back, another chat's state).
    const dropped = this.dropped.delete(sessionKey) && call.reset;
    const { outcome } = call;
    if (!outcome) return STATE_LINES.unavailable;
    if (outcome.ended) {
      this.expected.delete(sessionKey);
      return STATE_LINES.ended;
    }
    const lost = before !== undefined && !call.reset && outcome.from !== before;
    if (outcome.now) this.expected.set(sessionKey, outcome.now);
    else this.expected.delete(sessionKey);
    const verdict = outcome.kept
      ? STATE_LINES.kept
      : call.succeeded && outcome.reason
        ? STATE_LINES.unkept(unkeptClause(outcome.reason))
        : outcome.now
          ? STATE_LINES.unchanged
          : STATE_LINES.unchangedEmpty;
    if (outcome.dropped) {
      const why = HOLDER_FAILED[outcome.dropped] ?? outcome.dropped;
      // Given up before the program (it started from the empty state), or after a call that failed.
      return outcome.from === '' ? `${STATE_LINES.droppedBefore(why)} ${verdict}` : STATE_LINES.droppedAfter(why);
    }
    return dropped ? `${STATE_LINES.dropped} ${verdict}` : lost ? `${STATE_LINES.lost} ${verdict}` : verdict;
  }
}
