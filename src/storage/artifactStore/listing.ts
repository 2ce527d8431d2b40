import type { RunRecord } from '../runRecord';
import { compare, type StoreIndex } from '../storeIndex';

export interface SessionSummary {
  sessionDigest: string;
  /** From the session's newest run. */
  sessionLabel: string;
  runCount: number;
  latestRunId: string;
  latestStartedAt: string;
  /** The session's first run kept: when it started, and its program (the view labels the chat by them). */
  firstStartedAt: string;
  firstProgram: string;
}

/** A session's runs with a valid record, newest first. */
export function readable(index: StoreIndex, sessionDigest: string): RunRecord[] {
  return index
    .runsOf(sessionDigest)
    .reverse()
    .map((r) => r.run.record)
    .filter((r): r is RunRecord => r !== undefined);
}

/** Sessions with at least one readable run, the most recently used first. */
export function sessionSummaries(index: StoreIndex): SessionSummary[] {
  const sessions: SessionSummary[] = [];
  for (const sessionDigest of index.sessionDigests()) {
    const runs = readable(index, sessionDigest);
    if (runs.length === 0) continue;
    const newest = runs[0]!;
    const first = runs.at(-1)!;
    sessions.push({
      sessionDigest,
      sessionLabel: newest.sessionLabel,
      runCount: runs.length,
      latestRunId: newest.runId,
      latestStartedAt: newest.startedAt,
      firstStartedAt: first.startedAt,
      firstProgram: first.program,
    });
  }
  // Run ids sort by time; startedAt strings need not (fractions of a second are optional).
  return sessions.sort((a, b) => compare(b.latestRunId, a.latestRunId));
}
