/**
 * The artifact store's door: files a program produced and a record of each run, on plain disk
 * (store.ts), kept within a storage budget that takes a chat's state whole or not at all
 * (budget.ts), and what a host does with a prune after a call (afterCall.ts).
 */
export { ArtifactStore, type ArtifactStoreOptions, type PruneOptions } from './store';
export type { SessionSummary } from './listing';
export type { Disposable } from './events';
export { pruneSentence, type DroppedChat, type PruneResult } from './pruneResult';
export { pruneAfterCall, type CallPrune, type CallPruned } from './afterCall';
export { RunRecord, StoredFile, type RunOutcome } from '../runRecord';
export { FILES_DIR, RECORD_FILE, RunWriter, STREAM_FILES, writeFileAtomic } from '../runWriter';
export type { StoreFs } from '../storeIndex';
