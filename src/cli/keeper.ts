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
import { SessionStates } from '../core/state';
import { createSandboxProvider } from '../standalone/pipeline';
import { VERSION } from '../version';
import { KEEPER_COMMAND, connectKeeper, engineNamed, keepSeconds, keeperAddress, keepersDir, onLines, runOptions, withRunOptions, type KeeperReply, type KeeperRequest } from './keeperLink';
import { UsageError, one, type Parsed } from './options';
import { reportFailure, type CliOutput } from './report';
import { run, runWiring } from './run';
import { sandboxConfigFrom } from './sandboxConfig';

/**
 * Listens at `address` unless another keeper answers there (then undefined). It listens first at
 * a name of its own and then links `address` to that socket: a caller watching the folder sees
 * `address` appear only once a connection to it is taken (a socket's file appears as it is bound,
 * before it listens), and the link is refused where another keeper's is. One left by a keeper
 * that died is replaced.
 */
async function listenAlone(address: string): Promise<net.Server | undefined> {
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
  let caller: CliOutput | undefined;
  // What the sandbox's provider logs goes to the caller being served (nowhere in between).
  const config = sandboxConfigFrom(p, { out: (text) => caller?.out(text), err: (text) => caller?.err(text) });
  const server = await listenAlone(address);
  if (!server) return 0;
  const own = fs.statSync(address).ino;
  const provider = createSandboxProvider(config, runWiring(p, config, { keepLock: true }));
  const states = new SessionStates();
  let stopping: Promise<never> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      server.close();
      if (fs.statSync(address, { throwIfNoEntry: false })?.ino === own) fs.rmSync(address, { force: true });
      await provider.detachAll().catch(() => {});
      process.exit(0);
    })());
  // A socket of ours that is gone or replaced (a cache folder emptied): nobody finds this keeper
  // any more, and it holds the lock their runs wait for.
  const watcher = fs.watch(keepersDir(), () => {
    if (fs.statSync(address, { throwIfNoEntry: false })?.ino !== own) void stop();
  });
  watcher.on('error', () => void stop());
  let timer: NodeJS.Timeout | undefined;
  let waiting = 0;
  const arm = () => {
    clearTimeout(timer);
    if (waiting === 0) timer = setTimeout(() => void stop(), keep * 1000);
  };
  /** One caller: its run, refused (the keeper goes), or a `bye`. */
  const serve = async (socket: net.Socket, r: KeeperRequest | undefined) => {
    let failed = false;
    if (r?.t === 'bye') return stop();
    if (r === undefined || socket.destroyed) return;
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
    config.log.info(`run by the session's keeper, process ${process.pid}`);
    let code: number;
    try {
      code = await run(withRunOptions(p, r.perRun), { output: caller, code: r.code, kept: { provider, states, signal: cancel.signal } });
    } catch (e) {
      code = reportFailure(e, caller);
      failed = true;
    }
    caller = undefined;
    send(socket, { t: 'exit', code });
    socket.end();
    if (failed) return stop();
  };
  let queue = Promise.resolve();
  server.on('connection', (socket) => {
    socket.on('error', () => {});
    waiting++;
    clearTimeout(timer);
    const asked = request(socket);
    queue = queue.then(async () => {
      try {
        await serve(socket, await asked);
      } catch {
        await stop(); // not a run's failure (those are its caller's to read): nothing more is taken
      }
    });
    void queue.finally(() => {
      waiting--;
      arm();
    });
  });
  arm();
  return new Promise<number>(() => {}); // it ends by stop()
}
