import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { LockAhead } from '../../src/docker/container/lockAhead';

/**
 * The lock a command-line run asks for ahead, against engines that answer badly (the real engine's
 * cases are in test/docker/lockAhead.test.ts): whatever happens, the run is never held by it.
 */
describe('the session lock asked for ahead, on a bad engine (unit)', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-ahead-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** A server on a socket of `dir`, closed (with its connections) after `body`. */
  async function withServer(server: net.Server, body: (socketPath: string, requests: string[]) => Promise<void>): Promise<void> {
    const socketPath = path.join(dir, 'engine.sock');
    const requests: string[] = [];
    const sockets = new Set<net.Socket>();
    server.on('connection', (s: net.Socket) => sockets.add(s));
    server.on('request', (req: http.IncomingMessage) => requests.push(`${req.method} ${req.url}`));
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      await body(socketPath, requests);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  it('an engine that never answers: a cancelled claim gives nothing at once', async () => {
    // Accepts the connection and reads the request, and says nothing: the request's own deadline is long.
    await withServer(net.createServer(), async (socketPath) => {
      const ahead = new LockAhead(socketPath, 'codeact-cli-0123');
      const stop = new AbortController();
      const claimed = ahead.claim(stop.signal);
      stop.abort();
      assert.equal(await claimed, undefined);
      assert.equal(await ahead.claim(new AbortController().signal), undefined);
    });
  });

  it('an engine that has no such container: nothing is claimed, and the exec is asked for by the name', async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"message":"No such container: codeact-cli-0123"}');
    });
    await withServer(server, async (socketPath, requests) => {
      const ahead = new LockAhead(socketPath, 'codeact-cli-0123');
      assert.equal(await ahead.claim(new AbortController().signal), undefined);
      assert.deepEqual(requests, ['POST /containers/codeact-cli-0123/exec']);
    });
  });

  it('an engine that refuses the start (the container stopped meanwhile): nothing is claimed', async () => {
    const server = http.createServer((req, res) => {
      const created = req.url === '/containers/codeact-cli-0123/exec';
      res.writeHead(created ? 201 : 409, { 'content-type': 'application/json' });
      res.end(created ? '{"Id":"e1"}' : '{"message":"container is not running"}');
    });
    await withServer(server, async (socketPath, requests) => {
      const ahead = new LockAhead(socketPath, 'codeact-cli-0123');
      assert.equal(await ahead.claim(new AbortController().signal), undefined);
      assert.deepEqual(requests, ['POST /containers/codeact-cli-0123/exec', 'POST /exec/e1/start']);
    });
  });
});
