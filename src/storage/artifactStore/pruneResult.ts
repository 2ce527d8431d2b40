export interface PruneResult {
  deletedRuns: number;
  freedBytes: number;
  totalBytes: number;
}
