import * as http from 'node:http';
import type Dockerode from 'dockerode';
import type { HolderStream, LockTarget } from './lock';

/** The engine answered `status` (not the one expected) to `what`. */
export class SocketExecError extends Error {
  constructor(
    readonly what: string,
    readonly status: number | undefined,
  ) {
    super(`${what}: the engine answered ${status ?? 'without a status'}`);
    this.name = 'SocketExecError';
  }
}

/**
 * The container `name` on the engine at the Unix socket `socketPath`, as far as the lock needs it
 * (an exec created and started attached) and the exec's inspect, in Node's own HTTP client. The
 * lock a command-line run asks for ahead (lockAhead.ts) comes before everything else it loads:
 * dockerode and what it needs took 25-35 ms to import on a 2-vCPU machine (Node 20), on the way
 * to the lock's exec; this file adds nothing that is not loaded already. The requests are the ones
 * dockerode makes (the same paths, bodies and upgrade), so the engine sees no difference.
 */
export function socketContainer(socketPath: string, name: string): LockTarget & { execContainer(id: string): Promise<string> } {
  const path = (p: string) => p.replace('{name}', encodeURIComponent(name));
  return {
    async exec(options: Dockerode.ExecCreateOptions) {
      const created = JSON.parse(await ask(socketPath, 'POST', path('/containers/{name}/exec'), options, 201, 'create exec')) as { Id?: unknown };
      if (typeof created.Id !== 'string') throw new SocketExecError('create exec', 201);
      const id = created.Id;
      return { id, start: () => upgrade(socketPath, `/exec/${encodeURIComponent(id)}/start`, { Detach: false, Tty: false }) };
    },
    async execContainer(id: string) {
      const info = JSON.parse(await ask(socketPath, 'GET', `/exec/${encodeURIComponent(id)}/json`, undefined, 200, 'inspect exec')) as { ContainerID?: unknown };
      if (typeof info.ContainerID !== 'string') throw new SocketExecError('inspect exec', 200);
      return info.ContainerID;
    },
  };
}

function send(socketPath: string, method: string, path: string, body: unknown, headers: http.OutgoingHttpHeaders = {}): http.ClientRequest {
  const data = body === undefined ? undefined : JSON.stringify(body);
  const req = http.request({
    socketPath,
    method,
    path,
    headers: { ...(data !== undefined ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) } : {}), ...headers },
  });
  req.end(data);
  return req;
}

/** The body of the engine's answer, when its status is `expected`. */
function ask(socketPath: string, method: string, path: string, body: unknown, expected: number, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = send(socketPath, method, path, body);
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => (res.statusCode === expected ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new SocketExecError(what, res.statusCode))));
    });
  });
}

/** The connection, once the engine has upgraded it to the exec's raw stream (as dockerode's `hijack`). */
function upgrade(socketPath: string, path: string, body: unknown): Promise<HolderStream> {
  return new Promise((resolve, reject) => {
    const req = send(socketPath, 'POST', path, body, { Connection: 'Upgrade', Upgrade: 'tcp' });
    req.on('error', reject);
    req.on('upgrade', (_res, socket, head) => {
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    // Any other answer (a container that is gone or stopped) is not the stream.
    req.on('response', (res) => {
      res.resume();
      reject(new SocketExecError('start exec', res.statusCode));
    });
  });
}
