/**
 * The keeper that waits for the next new session. The spare maker (spareMaker.ts) becomes one
 * once it has made the spares: with one of them locked, and Node and the commands already loaded.
 * The first run of a new session (one no keeper holds) on the same engine, by the same version,
 * asks this one (keeperLink.ts). That run then costs starting Node, a round trip, the spare's
 * rename and the call. It no longer costs starting a keeper, loading the commands and the lock's
 * exec in the sandbox. The run names the session, which gets the spare, and brings its options
 * and folder: this process is that session's keeper from then on (keeper.ts), and starts the
 * maker of the next spare. A run whose options ask for another sandbox than the spare (another
 * image, other limits) gets one made, as it would have with no spare of its settings. The keeper
 * lets the spare go and ends after --keep-seconds without a run, when `cleanup` asks, when the
 * spare goes (removed, stopped), or when the spare cannot be given (that run is its caller's to
 * run, as any run a keeper does not take).
 */
import * as fs from 'node:fs';
import { DEFAULTS } from '../core/limits';
import type { Logger } from '../core/logger';
import { HeldSpare, type DockerSandboxProvider, type SandboxSpec } from '../docker';
import { listenAlone, serveRuns } from './keeper';
import { keepSeconds, keepersDir, standbyAddress } from './keeperLink';
import { number, one, type Parsed } from './options';
import { sandboxConfigFrom } from './sandboxConfig';
import { noteMakerDone, startSpareMaker } from './spareMaker';

/**
 * In a maker that made the spares for `spec` with `maker`: waits as the keeper of the next new
 * session; 0 at once when it cannot (`p` keeps no keeper, no spare is free, another keeper waits
 * already, an engine named by options).
 */
export async function standBy(p: Parsed, spec: SandboxSpec, maker: DockerSandboxProvider, log: Logger): Promise<number> {
  if (!keepSeconds(p) || one(p, 'session') === undefined) return 0;
  const address = standbyAddress(p);
  if (address === undefined) return 0;
  try {
    // Its settings are what a run's are compared with (keeper.ts): options that do not read, no keeper.
    sandboxConfigFrom(p, { out: () => {}, err: () => {} });
  } catch {
    return 0;
  }
  const held = await HeldSpare.take(maker.docker, await maker.spareNames(spec)).catch(() => undefined);
  if (!held) return 0;
  fs.mkdirSync(keepersDir(), { recursive: true, mode: 0o700 });
  // It takes any run's options and folder from whoever connects: only where nobody else can.
  if (!ownFolder(keepersDir())) {
    held.release();
    return 0;
  }
  const server = await listenAlone(address);
  if (!server) {
    held.release();
    return 0;
  }
  // `cleanup` waits for makers (a spare made after it looked would outlive it); a keeper it asks to go.
  noteMakerDone();
  log.info(`waiting with spare sandbox ${held.name} for a new session`);
  return serveRuns(p, server, address, {
    take: async (sessionKey) => ((await held.giveTo(sessionKey)) ? held.lock : 'no'),
    release: () => held.release(),
    afterFirstRun: (session, said) => {
      if (number(session, 'spares', DEFAULTS.spareSandboxes, 0, 8) > 0) startSpareMaker(session, spec, said);
    },
    lost: held.lock.lost,
  });
}

/** Whether `dir` is this user's and closed to everyone else (a folder made before with other rights is not). */
export function ownFolder(dir: string): boolean {
  const st = fs.statSync(dir, { throwIfNoEntry: false });
  return st !== undefined && st.isDirectory() && (process.getuid === undefined || st.uid === process.getuid()) && (st.mode & 0o077) === 0;
}
