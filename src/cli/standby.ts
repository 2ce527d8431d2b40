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
import { VERSION } from '../version';
import { listenAlone, serveRuns, type TakenSession } from './keeper';
import { engineNamed, keepSeconds, keeperAddress, keepersDir, ownVariables, runOptions, standbyAddress, withRunOptions, type RunRequest } from './keeperLink';
import { cliSessionKey, number, one, optionArgs, parse, type Parsed } from './options';
import type { CliOutput } from './report';
import { checkRun } from './run';
import { sandboxConfigFrom, type CliSandboxConfig } from './sandboxConfig';
import { noteMakerDone, spareMakerComing } from './spareMaker';

/**
 * In a maker that made the spares for `spec` with `maker`: waits as the keeper of the next new
 * session; 0 at once when it cannot (`p` keeps no keeper, no spare is free, another keeper waits
 * already, an engine named by options).
 */
export async function standBy(p: Parsed, spec: SandboxSpec, maker: DockerSandboxProvider, log: Logger): Promise<number> {
  if (!keepSeconds(p) || one(p, 'session') === undefined) return 0;
  const address = standbyAddress(p);
  if (address === undefined) return 0;
  let settings: string;
  try {
    // What a run's settings are compared with: options that do not read, no keeper.
    settings = sandboxSettings(sandboxConfigFrom(p, { out: () => {}, err: () => {} }));
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
    take: async (r, name, at, route) => {
      const run = runOf(r, route, settings);
      if (!run) return 'no';
      const address = keeperAddress(name, run.p);
      try {
        // The session's address first: a keeper of that session that started meanwhile keeps it.
        if (address === undefined) return 'no';
        fs.linkSync(at, address);
      } catch {
        return 'no';
      }
      let given: boolean;
      try {
        given = await held.giveTo(cliSessionKey(name));
      } catch {
        fs.rmSync(address, { force: true });
        return 'gone';
      }
      if (!given) {
        fs.rmSync(address, { force: true });
        return 'no';
      }
      return { ...run, address, lock: held.lock };
    },
    release: () => held.release(),
    afterFirstRun: (session, said) => (number(session, 'spares', DEFAULTS.spareSandboxes, 0, 8) > 0 ? spareMakerComing(session, spec, said) : undefined),
    lost: held.lock.lost,
  });
}

/**
 * What of a run's settings makes its sandbox. A waiting keeper gives its spare only to a run
 * whose settings make the same sandbox; another run would have it replaced, a rename and a
 * removal more than its own keeper pays.
 */
function sandboxSettings(c: CliSandboxConfig): string {
  const { backend, image, packages, limits, warmRunner, preloadModules, preloadWhen, runtime } = c;
  return JSON.stringify([backend, image, packages, limits, warmRunner, preloadModules, preloadWhen, runtime, c.network ?? null, c.credentials ? 'credentials' : null, backend === 'docker' ? null : c.workspace]);
}

/**
 * The run `r` as its own keeper would take it: its options read back through the table, the
 * extension's variables of its environment, in its folder (this process moves there). Undefined
 * when this keeper does not take it: another version or engine, options that do not read or keep
 * no keeper, a usage error (its caller's to say, before any sandbox is touched), or settings that
 * make another sandbox than the spare (`settings`).
 */
function runOf(r: RunRequest, route: CliOutput, settings: string): Pick<TakenSession, 'p' | 'config'> | undefined {
  try {
    const p = parse(['run', ...optionArgs({ command: 'run', flags: new Map(JSON.parse(r.options) as [string, string[]][]), positional: [] })]);
    if (r.version !== VERSION || runOptions(p) !== r.options || r.engine !== engineNamed(p) || !keepSeconds(p)) return undefined;
    for (const [name] of ownVariables(process.env)) delete process.env[name];
    for (const [name, value] of r.own ?? []) if (name.startsWith('CODEACT_')) process.env[name] = value;
    process.chdir(r.cwd);
    const config = sandboxConfigFrom(p, route);
    checkRun(withRunOptions(p, r.perRun), config);
    return sandboxSettings(config) === settings ? { p, config } : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `dir` is this user's and closed to everyone else (a folder made before with other rights is not). */
export function ownFolder(dir: string): boolean {
  const st = fs.statSync(dir, { throwIfNoEntry: false });
  return st !== undefined && st.isDirectory() && (process.getuid === undefined || st.uid === process.getuid()) && (st.mode & 0o077) === 0;
}
