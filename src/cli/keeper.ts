/**
 * A kept session's keeper: the process a `run` on a --session starts when none listens
 * (keeperLink.ts). It listens at an address of the user's own (a socket in a 0700 folder of the
 * user's cache) and runs the runs that come with the same options, from the same folder, by the
 * same version, one after the other, through the same code as a run of its own (run.ts). From its
 * first run on it holds the session's sandbox, its lock and its runner's connection. It goes after
 * --keep-seconds without a run, when a run it cannot take comes (it says so and lets the lock go
 * first; that run starts a keeper of its own), when `cleanup` asks, and after a run that failed
 * (the next starts afresh).
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import type { Logger } from '../core/logger';
import { SessionStates } from '../core/state';
import type { DockerSandboxProvider, LockAhead } from '../docker';
import { createSandboxProvider } from '../standalone/pipeline';
import { VERSION } from '../version';
import {
  KEEPER_COMMAND,
  connectKeeper,
  engineNamed,
  keepSeconds,
  keeperAddress,
  keepersDir,
  onLines,
  requestSession,
  runOptions,
  withRunOptions,
  type KeeperReply,
  type KeeperRequest,
  type RunRequest,
} from './keeperLink';
import { UsageError, one, type Parsed } from './options';
import { reportFailure, type CliOutput } from './report';
import { run, runWiring } from './run';
import { sandboxConfigFrom, type CliSandboxConfig } from './sandboxConfig';

/**
 * Listens at `address` unless another keeper answers there (then undefined). It listens first at
 * a name of its own and then links `address` to that socket: a caller watching the folder sees
 * `address` appear only once a connection to it is taken (a socket's file appears as it is bound,
 * before it listens), and the link is refused where another keeper's is. One left by a keeper
 * that died is replaced.
 */
export async function listenAlone(address: string): Promise<net.Server | undefined> {
  const own = `${address}.${process.pid}`;
  fs.rmSync(own, { force: true });
  const server = net.createServer({ allowHalfOpen: true });
  const error = await new Promise<Error | undefined>((resolve) => {
    server.once('error', resolve);
    server.listen(own, () => resolve(undefined));
  });
  if (error) return undefined;
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        fs.linkSync(own, address);
        return server;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') break;
        const other = await connectKeeper(address);
        if (other) {
          other.destroy();
          break;
        }
        fs.rmSync(address, { force: true });
      }
    }
    server.close();
    return undefined;
  } finally {
    fs.rmSync(own, { force: true });
  }
}

function send(socket: net.Socket, reply: KeeperReply): void {
  if (!socket.destroyed) socket.write(`${JSON.stringify(reply)}\n`);
}

/** Says `no` to a run this keeper does not take, and stays: its caller runs it by a keeper of its own. */
function refuse(socket: net.Socket): void {
  send(socket, { t: 'no' });
  socket.end();
}


/**
 * The request a caller sends first; undefined when it goes before it sent one (a keeper that
 * looked whether this one listens, a caller that found another first). Connections are half-open
 * (a caller's Ctrl-C ends its side, and the run's end still reaches it): its end says it went.
 */
function request(socket: net.Socket): Promise<KeeperRequest | undefined> {
  return new Promise((resolve) => {
    const went = () => {
      resolve(undefined);
      socket.end();
    };
    onLines(socket, (value) => {
      socket.off('end', went);
      socket.off('close', went);
      resolve(value as KeeperRequest);
    });
    socket.once('end', went);
    socket.once('close', went);
  });
}

export async function keepSession(p: Parsed): Promise<number> {
  const session = one(p, 'session');
  const keep = keepSeconds(p);
  if (session === undefined || !keep) throw new UsageError(`unknown command ${KEEPER_COMMAND}`);
  const address = keeperAddress(session, p);
  if (address === undefined) return 0;
  fs.mkdirSync(keepersDir(), { recursive: true, mode: 0o700 });
  const server = await listenAlone(address);
  if (!server) return 0;
  return serveRuns(p, server, address);
}

/** What a waiting keeper becomes for the session its first run names. */
export interface TakenSession {
  /** That run's options, read back as its own keeper reads them. */
  p: Parsed;
  config: CliSandboxConfig;
  /** The session's keeper address, linked to this keeper's socket. */
  address: string;
  /** The spare's lock, which the session's provider takes over. */
  lock: LockAhead;
}

/** A keeper with no session yet, waiting with a spare for a new one (standby.ts). */
export interface WaitingStart {
  /**
   * Gives the spare to the session `name` that run `r` names, taking the run's options, its
   * folder (the process's cwd) and the session's address; logs of the new config go to `route`.
   * `no`: refused, and the keeper waits on (another sandbox than the spare, a session with a
   * sandbox already, one whose keeper started meanwhile); `gone`: refused, and the keeper can take
   * no session (the spare or the engine failed).
   */
  take(r: RunRequest, name: string, at: string, route: CliOutput): Promise<TakenSession | 'no' | 'gone'>;
  /** Lets the spare go (the keeper goes without a session). */
  release(): void;
  /**
   * After the session's first run, before its caller hears of the end: the next new session's
   * spare is to be made. Returns what starts its maker, called once the caller has heard.
   */
  afterFirstRun(p: Parsed, log: Logger): (() => void) | undefined;
  /** Resolves if the spare goes while it waits (removed, stopped): the keeper goes too. */
  lost: Promise<void>;
}

/**
 * Serves the runs that come to `server` (listening at `address`) until it goes. With `waiting`, the
 * first run of a new session that comes names the session, which is given the spare: from then on
 * this is that session's keeper, at its address, with that run's options and in its folder.
 */
export async function serveRuns(first: Parsed, server: net.Server, address: string, waiting?: WaitingStart): Promise<number> {
  let p = first;
  let at = address;
  let session = waiting ? undefined : one(p, 'session');
  // The session a waiting keeper gives its spare to, from the moment its run is taken.
  let taking: string | undefined;
  let keep = keepSeconds(p) ?? 0;
  let caller: CliOutput | undefined;
  // What the sandbox's provider logs goes to the caller being served (nowhere in between).
  const route: CliOutput = { out: (text) => caller?.out(text), err: (text) => caller?.err(text) };
  // A waiting keeper has neither until a session is given its spare: that run's options make them
  // (takeSession), read once there (standby.ts), not here as well.
  let config: CliSandboxConfig | undefined = waiting ? undefined : sandboxConfigFrom(p, route);
  // While it waits it keeps no folder of anyone's busy; a run's own folder is taken with its session.
  if (waiting) process.chdir('/');
  const own = fs.statSync(at).ino;
  let provider: DockerSandboxProvider | undefined = config && createSandboxProvider(config, runWiring(p, config, { keepLock: true }));
  const states = new SessionStates();
  let stopping: Promise<never> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      server.close();
      if (fs.statSync(at, { throwIfNoEntry: false })?.ino === own) fs.rmSync(at, { force: true });
      if (session === undefined) waiting?.release();
      await provider?.detachAll().catch(() => {});
      process.exit(0);
    })());
  // A socket of ours that is gone or replaced (a cache folder emptied): nobody finds this keeper
  // any more, and it holds the lock their runs wait for.
  const watcher = fs.watch(keepersDir(), () => {
    if (fs.statSync(at, { throwIfNoEntry: false })?.ino !== own) void stop();
  });
  watcher.on('error', () => void stop());
  let spareLost = false;
  void waiting?.lost.then(() => {
    spareLost = true;
    if (session === undefined && taking === undefined) void stop();
  });
  let timer: NodeJS.Timeout | undefined;
  let pending = 0;
  const arm = () => {
    clearTimeout(timer);
    if (pending === 0) timer = setTimeout(() => void stop(), keep * 1000);
  };
  /** A waiting keeper's first run: its session is given the spare and this keeper. False: refused. */
  const takeSession = async (socket: net.Socket, r: RunRequest, name: string): Promise<boolean> => {
    const taken = await waiting!.take(r, name, at, route).catch(() => 'gone' as const);
    if (typeof taken === 'string') {
      // Its caller runs it by a keeper of its own; this one waits on where it waited, unless
      // nothing is left to wait with.
      refuse(socket);
      process.chdir('/');
      if (taken === 'gone' || spareLost) void stop();
      return false;
    }
    const before = at;
    [session, p, at, config, keep] = [name, taken.p, taken.address, taken.config, keepSeconds(taken.p)!];
    fs.rmSync(before, { force: true });
    provider = createSandboxProvider(config, runWiring(p, config, { keepLock: true, lockAhead: taken.lock }));
    return true;
  };
  /** One caller: its run, refused (the keeper goes), or a `bye`. */
  const serve = async (socket: net.Socket, r: KeeperRequest | undefined | null) => {
    let failed = false;
    if (r === null) return; // answered already (connection below)
    if (r?.t === 'bye') return stop();
    if (r === undefined || socket.destroyed) {
      // A caller that went before its run was taken gives up its place as the session taken.
      if (session === undefined && r !== undefined && requestSession(r) === taking) taking = undefined;
      return;
    }
    let firstRun = false;
    if (session === undefined) {
      const name = requestSession(r);
      if (name === undefined) refuse(socket);
      firstRun = name !== undefined && (await takeSession(socket, r, name));
      if (!firstRun) {
        taking = undefined;
        return;
      }
    } else if (waiting && requestSession(r) !== session) {
      // Come by the address it waited at, for another session: refused, and this keeper stays.
      refuse(socket);
      return;
    }
    if (r.version !== VERSION || r.options !== runOptions(p) || r.engine !== engineNamed(p) || r.cwd !== process.cwd()) {
      send(socket, { t: 'no' });
      return stop();
    }
    send(socket, { t: 'run' });
    // The caller's Ctrl-C (or its end) cancels the run, which then ends as a cancelled one does.
    const cancel = new AbortController();
    socket.once('end', () => cancel.abort());
    socket.once('close', () => cancel.abort());
    caller = { out: (d) => send(socket, { t: 'out', d }), err: (d) => send(socket, { t: 'err', d }) };
    config!.log.info(`run by the session's keeper, process ${process.pid}${firstRun ? ', which waited with a spare sandbox for a new session' : ''}`);
    let code: number;
    try {
      code = await run(withRunOptions(p, r.perRun), { output: caller, code: r.code, kept: { provider: provider!, states, signal: cancel.signal } });
    } catch (e) {
      code = reportFailure(e, caller);
      failed = true;
    }
    const startMaker = firstRun ? waiting!.afterFirstRun(p, config!.log) : undefined;
    caller = undefined;
    send(socket, { t: 'exit', code });
    socket.end();
    if (startMaker) {
      await answered(socket);
      startMaker();
    }
    if (failed) return stop();
  };
  let queue = Promise.resolve();
  server.on('connection', (socket) => {
    socket.on('error', () => {});
    pending++;
    clearTimeout(timer);
    const asked = request(socket).then((r) => {
      if (!waiting || r?.t !== 'run') return r;
      // A run of another session, come by the address this keeper waited at: refused at once (its
      // caller starts a keeper of its own), not after this session's runs.
      const name = requestSession(r);
      if ((taking ?? session) === undefined) taking = name;
      else if (name !== (taking ?? session)) {
        refuse(socket);
        return null;
      }
      return r;
    });
    queue = queue.then(async () => {
      try {
        await serve(socket, await asked);
      } catch {
        await stop(); // not a run's failure (those are its caller's to read): nothing more is taken
      }
    });
    void queue.finally(() => {
      pending--;
      arm();
    });
  });
  arm();
  return new Promise<number>(() => {}); // it ends by stop()
}

/** How long a keeper waits for a caller that has its run's end to hang up, before it goes on anyway. */
const HANG_UP_MS = 1000;

/**
 * Resolves once the caller's side of `socket` closes, or after HANG_UP_MS. A caller leaves it open
 * until its process exits (keeperLink.ts, exchange): what the keeper starts then (the next spare's
 * maker: a new Node process, a container) takes no core from that exit, which its user waits for.
 */
function answered(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed) return resolve();
    const timer = setTimeout(resolve, HANG_UP_MS);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
