/**
 * The Docker layer's light door: what a command-line run starts before the rest of the layer is
 * loaded. index.ts brings every part of the engine client (zod, contexts, the runner's source);
 * this file reads the few files it names and Node's HTTP client, nothing else (esbuild.mjs makes it a
 * chunk of its own, cli-ahead.mjs, so the engine starts the lock's exec while the rest loads).
 */
import { sessionDigest } from '../core/session';
import { sharedSandboxName } from './container/labels';
import { LockAhead } from './container/lockAhead';
import { defaultSocketPath, plainUnixSocket } from './engine/plainSocket';
import type { EngineTarget } from './engine/target';

export type { LockAhead };

/**
 * Asks now for the cross-process lock of the sandbox the command line keeps for `sessionKey`, on
 * the engine the environment names plainly (plainSocket.ts); undefined when it names one any
 * other way. The run checks the engine it then resolves is the same before it uses the lock.
 */
export function lockCliSessionAhead(sessionKey: string): LockAhead | undefined {
  const socketPath = plainUnixSocket();
  if (socketPath === undefined) return undefined;
  return new LockAhead(socketPath, sharedSandboxName('cli', sessionDigest(sessionKey)));
}

/** Whether `ahead` was asked on the engine `target` names (resolveEngine's answer): only then is it used. */
export function aheadOnEngine(ahead: Pick<LockAhead, 'socketPath'>, target: EngineTarget, env: NodeJS.ProcessEnv = process.env): boolean {
  return target.protocol === 'unix' && (target.socketPath ?? defaultSocketPath('unix', env)) === ahead.socketPath;
}
