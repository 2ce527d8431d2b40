/**
 * The next new session's spare is made by a process of its own: a `run` prints its result and
 * exits, and the maker (started detached, with no terminal and no pipe of the caller's) creates
 * the spare on the engine and ends. A caller that reads the run's output to its end is never held
 * by it.
 *
 * Each maker is noted by a file named after its pid, written by the run that started it before
 * that run exits and removed by the maker when it ends: `cleanup` waits for the makers first, so
 * a spare made just after it listed the engine's sandboxes cannot outlive it.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import type { Logger } from '../core/logger';
import { describeError } from '../core/errors';
import { PRELOAD_WHEN } from '../core/runnerProtocol';
import { userCacheDir } from '../mcp/cacheDir';
import type { SandboxSpec } from '../docker';
import { sessionOptions } from './keeperLink';
import { optionArgs, type Parsed } from './options';

/** The command a maker is started with; not in the usage (only `run` starts one). */
export const SPARE_MAKER_COMMAND = '__make-spares';
/** The spec the spares are made for, as the run that started the maker used it. */
const SPEC_VARIABLE = 'CODEACT_SPARE_SPEC';
/** A maker that has not ended by then gives up (its file is stale after it). */
export const MAKER_DEADLINE_MS = 5 * 60_000;

const specShape = z.object({
  image: z.string().min(1),
  limits: z.object({ memoryMb: z.number(), cpus: z.number(), pidsLimit: z.number(), workAreaMb: z.number() }),
  warmRunner: z.boolean().optional(),
  preloadModules: z.array(z.string()).optional(),
  preloadWhen: z.enum(PRELOAD_WHEN).optional(),
  runtime: z.string().optional(),
  packagesSetting: z.string().optional(),
  // The CLI never sets `testing`: a maker's spares have the allow-list alone.
  network: z.object({ policy: z.object({ allow: z.array(z.string()).min(1), deny: z.array(z.string()) }) }).optional(),
});

export function makersDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(userCacheDir(env), 'codeact-sandbox', 'spare-makers');
}

/**
 * Starts a maker of `p`'s --spares spares for `spec` on the engine `p` names, and notes it. It is given
 * the run's options (all but those of one run), in this folder: once the spares are made it may
 * wait as the keeper of the next new session of those options (standby.ts). Never throws: without
 * a maker the next new session makes its own sandbox.
 */
export function startSpareMaker(p: Parsed, spec: SandboxSpec, log: Logger): void {
  const cli = process.argv[1];
  if (!cli) return;
  try {
    // Never a secret's file or descriptor: a maker reads none (a run with credentials keeps no spares).
    const options = sessionOptions(p);
    for (const name of ['secret', 'credentials']) options.flags.delete(name);
    const child = spawn(process.execPath, [cli, SPARE_MAKER_COMMAND, ...optionArgs(options)], {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, [SPEC_VARIABLE]: JSON.stringify(spec) },
    });
    child.on('error', (e) => log.info(`the spare maker could not start: ${describeError(e)}`));
    child.unref();
    if (child.pid === undefined) return;
    fs.mkdirSync(makersDir(), { recursive: true });
    fs.writeFileSync(path.join(makersDir(), String(child.pid)), '');
    log.info(`the next new session's spare is made by process ${child.pid}`);
  } catch (e) {
    log.info(`the spare maker could not start: ${describeError(e)}`);
  }
}

/**
 * For a keeper whose caller is still to hear its run's end: notes, under this process's pid, the
 * maker it starts once the caller has heard (its spawn, a fork of this process, and its Node's
 * start would hold that caller's exit). `cleanup` and makersEnded wait for the note as for a
 * maker's; the start returned notes the maker and removes this note.
 */
export function spareMakerComing(p: Parsed, spec: SandboxSpec, log: Logger): () => void {
  const note = path.join(makersDir(), String(process.pid));
  try {
    fs.mkdirSync(makersDir(), { recursive: true });
    fs.writeFileSync(note, '');
  } catch {
    // Unnoted: as for a maker that could not note itself.
  }
  log.info("the next new session's spare is made by a process started once this run has answered");
  return () => {
    try {
      startSpareMaker(p, spec, log);
    } finally {
      fs.rmSync(note, { force: true });
    }
  };
}

/** The spec a maker was started with; undefined when it is missing or not one. */
export function makerSpec(env: NodeJS.ProcessEnv = process.env): SandboxSpec | undefined {
  try {
    const parsed = specShape.safeParse(JSON.parse(env[SPEC_VARIABLE] ?? ''));
    return parsed.success ? (parsed.data as SandboxSpec) : undefined;
  } catch {
    return undefined;
  }
}

/** In the maker, once its spec is read: the variable leaves its environment. */
export function forgetMakerSpec(env: NodeJS.ProcessEnv = process.env): void {
  delete env[SPEC_VARIABLE];
}

/** In the maker: removes its note when it ends, however it ends. */
export function noteMakerEnd(): void {
  process.on('exit', noteMakerDone);
}

/** In the maker: removes its note now (its spares are made: it waits as a keeper, which `cleanup` asks to go). */
export function noteMakerDone(): void {
  fs.rmSync(path.join(makersDir(), String(process.pid)), { force: true });
}

/** The pids of makers noted in `dir` that still run (stale notes, of makers that died or gave up, are removed). */
export function liveMakers(dir: string, isAlive: (pid: number) => boolean, now = Date.now()): number[] {
  const live: number[] = [];
  for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    const file = path.join(dir, name);
    const pid = Number(name);
    const stat = fs.statSync(file, { throwIfNoEntry: false });
    if (!stat) continue;
    if (Number.isInteger(pid) && pid > 0 && isAlive(pid) && now - stat.mtimeMs < MAKER_DEADLINE_MS) live.push(pid);
    else fs.rmSync(file, { force: true });
  }
  return live;
}

/**
 * Resolves once no maker runs: the notes are watched (a maker's ending removes its note), and looked
 * at again every second for a maker that died without removing it.
 */
export async function makersEnded(dir: string, isAlive: (pid: number) => boolean): Promise<void> {
  while (liveMakers(dir, isAlive).length > 0) {
    await new Promise<void>((resolve) => {
      let watcher: fs.FSWatcher | undefined;
      const done = () => {
        clearTimeout(timer);
        watcher?.close();
        resolve();
      };
      const timer = setTimeout(done, 1000);
      try {
        watcher = fs.watch(dir, done);
      } catch {
        // The folder went away: looked at again at once.
        done();
      }
    });
  }
}
