import { stateChain } from '../../core/state';
import { stitchedStateRuns, type OriginReader, type StoredStateRun } from '../chatOrigins';
import type { RunRecord } from '../runRecord';
import type { LiveChain } from './budget';

/**
 * Each chat's live chain, as the budget needs it (budget.ts): the runs a resume of the chat would
 * replay, read as a resume reads them. A run read from the copies a chat keeps in its own run
 * folder belongs to no one here (those copies go with that folder); one read from another chat's
 * records is a run of that chat this chain reads.
 */
export async function liveChains(reader: OriginReader, chats: readonly string[]): Promise<LiveChain[]> {
  const copied = new WeakSet<RunRecord>();
  const noting: OriginReader = {
    own: (chat) => reader.own(chat),
    copies: (chat, runId, origin) => {
      const runs = reader.copies(chat, runId, origin);
      for (const run of runs ?? []) copied.add(run.record);
      return runs;
    },
  };
  const chains: LiveChain[] = [];
  for (const chat of chats) {
    const chain = stateChain(await stitchedStateRuns(noting, chat));
    if (chain.kind !== 'ok') continue;
    const runs = (chain.runs as StoredStateRun[]).filter((r) => !copied.has(r.record));
    chains.push({
      chat,
      own: runs.filter((r) => r.record.sessionKeyDigest === chat).map((r) => r.runId),
      reads: runs.filter((r) => r.record.sessionKeyDigest !== chat).map((r) => ({ chat: r.record.sessionKeyDigest, run: r.runId })),
    });
  }
  return chains;
}
