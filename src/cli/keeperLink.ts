/**
 * A kept session's keeper, as a run finds it (main.ts, before the commands load): the address it
 * listens at, its start, and the exchange of one run with it. A run on a --session is run by a
 * process of its own (keeper.ts), started by the session's first run, that holds the session's
 * sandbox, its lock and its runner's connection for a while and runs the runs of the same options:
 * such a run costs starting Node and one round trip, not loading the engine client and an exec of
 * the lock in the sandbox (the slowest step under gVisor). Node's own modules only: this file is
 * part of dist/cli.js.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { userCacheDir } from '../mcp/cacheDir';
import { VERSION } from '../version';
import { ENGINE_OPTIONS, one, optionArgs, type Parsed } from './options';

/** The keeper's command; not in the usage (only `run` starts one). */
export const KEEPER_COMMAND = '__keep-session';
/** How long a keeper waits for the next run (--keep-seconds). */
export const KEEP_SECONDS_DEFAULT = 60;

/** The variables that choose the engine beside the options (as resolveEngine reads them). */
const ENGINE_VARIABLES = ['DOCKER_HOST', 'DOCKER_CONTEXT', 'DOCKER_CONFIG', 'DOCKER_CERT_PATH', 'DOCKER_TLS_VERIFY', 'HOME'] as const;
/**
 * Linux's limit on a socket's path (sun_path, with its terminating zero), less the room for the
 * keeper's own name beside it (`.` and a pid: keeper.ts listens there first).
 */
const MAX_SOCKET_PATH = 107 - 8;

export function keepersDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(userCacheDir(env), 'codeact-sandbox', 'keepers');
}

/**
 * What a keeper is asked. `run`: one run (its options as `runOptions` reads them, those of the run
 * alone, the engine it names, and the program read by the caller); `bye`: go now.
 */
export type KeeperRequest =
  | { t: 'run'; version: string; cwd: string; options: string; perRun: [string, string[]][]; engine: string; code: string; own?: [string, string][] }
  | { t: 'bye' };

/** A request to run a program. */
export type RunRequest = Extract<KeeperRequest, { t: 'run' }>;

/** The extension's own variables of `env` (CODEACT_DEBUG, CODEACT_DEVCONTAINER_CLI): a keeper waiting for a new session takes the run's. */
export function ownVariables(env: NodeJS.ProcessEnv): [string, string][] {
  return Object.entries(env)
    .filter((e): e is [string, string] => e[0].startsWith('CODEACT_') && e[1] !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The options that belong to one run, as its program does (the pipeline takes them call by call). */
const PER_RUN = ['reset', 'file', 'output'];

/**
 * What a keeper says, a JSON object per line: `run` (it runs it), then `out` and `err` (what the
 * run writes to standard output and error), then `exit` (its exit code); or `no`: it does not run
 * it and goes (another version, other options, another folder), so the caller runs it itself.
 */
export type KeeperReply = { t: 'run' } | { t: 'out'; d: string } | { t: 'err'; d: string } | { t: 'exit'; code: number } | { t: 'no' };

/** The options of a run as a keeper compares them: every one but the program and those of the run alone, in a fixed order. */
export function runOptions(p: Parsed): string {
  return JSON.stringify([...p.flags.entries()].filter(([name]) => !PER_RUN.includes(name)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** `p` without the options of one run alone: the options a keeper, or a maker that may become one, is started with. */
export function sessionOptions(p: Parsed): Parsed {
  return { ...p, flags: new Map([...p.flags].filter(([name]) => !PER_RUN.includes(name))) };
}

/** The keeper's own options with the run's own (`--reset`, `--file`, `--output`) in place of its, as that run is run. */
export function withRunOptions(keeper: Parsed, perRun: readonly [string, string[]][]): Parsed {
  const flags = new Map([...keeper.flags].filter(([name]) => !PER_RUN.includes(name)));
  for (const [name, values] of perRun) if (PER_RUN.includes(name)) flags.set(name, values);
  return { command: 'run', flags, positional: ['-'] };
}

/** The engine as a run's environment and options name it (a keeper serves the runs that name it alike). */
export function engineNamed(p: Parsed, env: NodeJS.ProcessEnv = process.env): string {
  return JSON.stringify([ENGINE_VARIABLES.map((name) => env[name] ?? null), ENGINE_OPTIONS.map((name) => p.flags.get(name) ?? null)]);
}

/** --keep-seconds, or undefined when the option is not a number from 0 to 3600 (the command says so). */
export function keepSeconds(p: Parsed): number | undefined {
  const raw = one(p, 'keep-seconds');
  if (raw === undefined) return KEEP_SECONDS_DEFAULT;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 && n <= 3600 ? n : undefined;
}

/**
 * Where the keeper of `session` on the engine `p` and `env` name listens; undefined where the
 * path would be too long for a socket (then no keeper is started or asked).
 */
export function keeperAddress(session: string, p: Parsed, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const digest = createHash('sha256').update(JSON.stringify([session, engineNamed(p, env)])).digest('hex').slice(0, 32);
  const address = path.join(keepersDir(env), `${digest}.sock`);
  return Buffer.byteLength(address) <= MAX_SOCKET_PATH ? address : undefined;
}

/**
 * Where a keeper waits for a new session with a spare locked (standby.ts): one per engine, as the
 * environment names it, and version. It takes the first run of a new session that comes, with that
 * run's options and folder. Undefined where the path would be too long for a socket, and for an
 * engine named by options (the spare's lock is asked by name on the environment's engine).
 */
export function standbyAddress(p: Parsed, env: NodeJS.ProcessEnv = process.env, version = VERSION): string | undefined {
  if (ENGINE_OPTIONS.some((name) => p.flags.has(name))) return undefined;
  // Every run that could take its spare (the spares are the engine's, by version) finds it here.
  const digest = createHash('sha256').update(JSON.stringify([engineNamed(p, env), version])).digest('hex').slice(0, 24);
  const address = path.join(keepersDir(env), `new-${digest}.sock`);
  return Buffer.byteLength(address) <= MAX_SOCKET_PATH ? address : undefined;
}

/** The --session a run's request names (its options hold it), or undefined. */
export function requestSession(r: RunRequest): string | undefined {
  try {
    const found = (JSON.parse(r.options) as [string, string[]][]).find(([name]) => name === 'session')?.[1];
    return found?.length === 1 && typeof found[0] === 'string' ? found[0] : undefined;
  } catch {
    return undefined;
  }
}

/** Connects to `address`; undefined when nothing listens there (no keeper, or one that is gone). */
export function connectKeeper(address: string): Promise<net.Socket | undefined> {
  return new Promise((resolve) => {
    if (!fs.existsSync(address)) return resolve(undefined);
    const socket = net.connect(address);
    socket.once('connect', () => {
      socket.off('error', refused);
      resolve(socket);
    });
    const refused = () => resolve(undefined);
    socket.once('error', refused);
  });
}

/** Reads a keeper's (or a caller's) lines as JSON values, in order; ends with the connection. */
export function onLines(socket: net.Socket, each: (value: unknown) => void): void {
  let buffered = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      try {
        each(JSON.parse(line));
      } catch {
        socket.destroy(); // not a keeper's (or a caller's) line: nothing more is read from it
      }
    }
  });
}

export interface KeptRunOutcome {
  /** The run's exit code; undefined: the keeper did not run it (the caller runs it itself, with `code`). */
  exitCode: number | undefined;
  /** The program, as read (standard input is read once). */
  code: string | undefined;
}

/**
 * Runs `p` (a `run` on a --session) by the session's keeper: the one that listens, or one started
 * now (the session's first run, or the first after the last keeper went). What the run writes goes
 * to this process's standard output and error; a Ctrl-C (SIGINT, SIGTERM) cancels it there. Never
 * throws: what it cannot do (no keeper could start, --keep-seconds 0) is left to the run itself,
 * which then runs in this process.
 */
export async function runByKeeper(p: Parsed, readProgram: (file: string) => Promise<string>, env: NodeJS.ProcessEnv = process.env): Promise<KeptRunOutcome> {
  const none = { exitCode: undefined, code: undefined };
  let session: string | undefined;
  try {
    session = one(p, 'session');
  } catch {
    return none;
  }
  const address = session === undefined ? undefined : keeperAddress(session, p, env);
  if (address === undefined) return none;
  const keep = keepSeconds(p);
  // A run that keeps no keeper asks the session's to go: else it would wait for the lock it holds.
  // So does a run with --secret: its files or descriptors (/dev/fd/3) are this process's to read.
  if (keep === 0 || p.flags.has('secret')) {
    await dismissKeeper(address);
    // And the keeper waiting for a new session: the spare it holds locked is then free for this run.
    const waiting = standbyAddress(p, env);
    if (waiting !== undefined) await dismissKeeper(waiting);
  }
  if (p.flags.has('secret')) return none;
  if (!keep || p.positional.length !== 1) return none;
  let code: string;
  try {
    code = await readProgram(p.positional[0]!);
  } catch {
    return none; // the run itself says why it cannot read the program
  }
  // A keeper that does not take the run (other options, another version) goes; the next one is this run's own.
  for (let attempt = 0; attempt < 2; attempt++) {
    // None yet: a keeper waiting with a spare for a new session takes it (standby.ts), once.
    const waiting = attempt === 0 ? standbyAddress(p, env) : undefined;
    const socket = (await connectKeeper(address)) ?? (waiting === undefined ? undefined : await connectKeeper(waiting)) ?? (await startKeeper(p, address));
    if (!socket) break;
    const exitCode = await exchange(socket, keeperRequest(p, code, env));
    if (exitCode !== undefined) return { exitCode, code };
  }
  return { exitCode: undefined, code };
}

/**
 * Starts the session's keeper, detached (no terminal and no pipe of the caller's: a caller that
 * reads the run's output to its end is not held by it), and connects to it once it listens; or to
 * another that started at the same time. Undefined when it ended without one listening.
 */
async function startKeeper(p: Parsed, address: string): Promise<net.Socket | undefined> {
  const cli = process.argv[1];
  if (!cli) return undefined;
  const ended = new AbortController();
  try {
    const child = spawn(process.execPath, [cli, KEEPER_COMMAND, ...optionArgs(p)], { detached: true, stdio: 'ignore' });
    child.once('error', () => ended.abort());
    child.once('exit', () => ended.abort());
    child.unref();
  } catch {
    return undefined;
  }
  // A keeper that found another listening ends: that one is looked for once more.
  return (await keeperAppears(address, ended.signal)) ?? (await connectKeeper(address));
}

/** The request of a run of `p` with the program `code`. */
export function keeperRequest(p: Parsed, code: string, env: NodeJS.ProcessEnv = process.env): RunRequest {
  const perRun = [...p.flags].filter(([name]) => PER_RUN.includes(name));
  return { t: 'run', version: VERSION, cwd: process.cwd(), options: runOptions(p), perRun, engine: engineNamed(p, env), code, own: ownVariables(env) };
}

/**
 * Gives the run `request` to the keeper at the other end of `socket`; what it writes goes to this
 * process's standard output and error. Its exit code, or undefined when the keeper did not run it.
 */
export function exchange(socket: net.Socket, request: KeeperRequest): Promise<number | undefined> {
  return new Promise<number | undefined>((resolve) => {
    let running = false;
    let exit: number | undefined;
    const cancel = () => socket.end();
    process.once('SIGINT', cancel);
    process.once('SIGTERM', cancel);
    const done = (code: number | undefined) => {
      process.off('SIGINT', cancel);
      process.off('SIGTERM', cancel);
      resolve(code);
    };
    onLines(socket, (value) => {
      const reply = value as KeeperReply;
      if (reply.t === 'run') running = true;
      else if (reply.t === 'out') process.stdout.write(reply.d);
      else if (reply.t === 'err') process.stderr.write(reply.d);
      else if (reply.t === 'exit') exit = reply.code;
      // `no`: the keeper goes; the connection's end below says it has.
    });
    socket.on('error', () => {});
    // Once the run's end is here, this side stays open until this process exits: a keeper that
    // starts work after a run (the next spare's maker) waits for that, so the work does not take
    // the cores from this process's exit (keeper.ts, answered).
    socket.allowHalfOpen = true;
    socket.on('end', () => {
      if (exit === undefined) return void socket.end();
      socket.unref();
      done(exit);
    });
    socket.on('close', () => {
      if (exit !== undefined || !running) return done(exit);
      process.stderr.write("codeact-sandbox: the session's keeper ended before the run's result came back; the program may have run. Run it again.\n");
      done(1);
    });
    socket.write(`${JSON.stringify(request)}\n`);
  });
}

/**
 * Resolves with a connection to the keeper at `address` once one listens there (now, or when its
 * socket appears: the folder is watched), or with undefined once `signal` aborts.
 */
function keeperAppears(address: string, signal: AbortSignal): Promise<net.Socket | undefined> {
  return new Promise((resolve) => {
    let done = false;
    let watcher: fs.FSWatcher | undefined;
    const finish = (socket: net.Socket | undefined) => {
      if (done) return void socket?.destroy();
      done = true;
      watcher?.close();
      signal.removeEventListener('abort', aborted);
      resolve(socket);
    };
    const aborted = () => finish(undefined);
    const look = () => void connectKeeper(address).then((socket) => socket && finish(socket));
    signal.addEventListener('abort', aborted, { once: true });
    if (signal.aborted) return aborted();
    try {
      fs.mkdirSync(path.dirname(address), { recursive: true, mode: 0o700 });
      watcher = fs.watch(path.dirname(address), look);
      watcher.on('error', () => {});
    } catch {
      // Not watched: only the look below.
    }
    look();
  });
}

/** Until `socket` closes (a keeper that was asked to go has gone: it let the session's lock go first). */
function closed(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed) return resolve();
    socket.on('error', () => {});
    socket.once('close', () => resolve());
    socket.resume();
  });
}

/** Asks the keeper at `address`, if one listens, to go, and waits until it has. */
export async function dismissKeeper(address: string): Promise<boolean> {
  const socket = await connectKeeper(address);
  if (!socket) return false;
  const request: KeeperRequest = { t: 'bye' };
  socket.write(`${JSON.stringify(request)}\n`);
  await closed(socket);
  return true;
}
