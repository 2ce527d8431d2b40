/**
 * The two ways a program runs in a sandbox: handed to the warm runner over its channel
 * (warmStrategy, runnerChannel), or started by `docker exec` (execStrategy); and how a run that
 * stopped is told apart from one the engine stopped (stopped).
 */
export { ExecStrategy, KILL_GRACE_MS } from './execStrategy';
export type { ExitInfo, StrategyResult } from './runStrategy';
export { RunnerChannel } from './runnerChannel';
export { WarmStrategy, type WarmOps } from './warmStrategy';
