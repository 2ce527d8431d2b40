/**
 * The artifact store's door: files a program produced and a record of each run, on plain disk
 * (store.ts), kept within a storage budget.
 */
export { ArtifactStore, type ArtifactStoreOptions } from './store';
export type { SessionSummary } from './listing';
export type { Disposable } from './events';
export type { PruneResult } from './pruneResult';
export { RunRecord, StoredFile, type RunOutcome } from '../runRecord';
export { FILES_DIR, RECORD_FILE, RunWriter, STREAM_FILES, writeFileAtomic } from '../runWriter';
export type { StoreFs } from '../storeIndex';
