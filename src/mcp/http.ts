import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { describeError } from '../core/errors';
import type { Logger } from '../core/logger';

/** The door's address and what a client must send with every request. */
export interface LoopbackDoor {
  url: string;
  /** The secret the client sends (Authorization: Bearer ...): only the host that opened the door has it. */
  headers: Record<string, string>;
  close(): Promise<void>;
}

/** Largest request body read (a call's input: its program and a few names). */
const MAX_BODY = 8 * 1024 * 1024;

/**
 * The MCP server over Streamable HTTP on loopback, for one host process (a VS Code window): bound to
 * 127.0.0.1 only, every request must carry the door's own secret and name the door's own address
 * as its Host (a web page the person visits can neither know the secret nor pass for this host by
 * DNS rebinding). Each client session gets a server of its own (`newServer`) over the host's one
 * set of sandboxes.
 */
export async function openLoopback(newServer: () => Server, log: Logger): Promise<LoopbackDoor> {
  const secret = randomBytes(32).toString('base64url');
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: Server }>();
  let host = '';
  const httpServer = http.createServer((req, res) => {
    void serve(req, res).catch((e: unknown) => {
      log.warn(`MCP door: ${describeError(e)}`);
      if (!res.headersSent) reply(res, 500, 'internal error');
    });
  });

  async function serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.headers.host !== host) return reply(res, 421, 'wrong host');
    if (!authorized(req.headers.authorization, secret)) return reply(res, 401, 'unauthorized');
    if (req.url !== '/mcp') return reply(res, 404, 'not found');
    const id = req.headers['mcp-session-id'];
    const known = typeof id === 'string' ? sessions.get(id) : undefined;
    if (req.method === 'POST') {
      const body = await readJson(req);
      if (body === undefined) return reply(res, 400, 'not JSON');
      if (known) return known.transport.handleRequest(req, res, body);
      if (id !== undefined || !isInitializeRequest(body)) return reply(res, 404, 'no such session');
      const server = newServer();
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => void sessions.set(sid, { transport, server }),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await server.connect(transport);
      return transport.handleRequest(req, res, body);
    }
    if (!known) return reply(res, 404, 'no such session');
    return known.transport.handleRequest(req, res);
  }

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = httpServer.address() as AddressInfo;
  host = `127.0.0.1:${port}`;
  return {
    url: `http://${host}/mcp`,
    headers: { Authorization: `Bearer ${secret}` },
    async close() {
      await Promise.allSettled([...sessions.values()].map(({ server }) => server.close()));
      sessions.clear();
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}

function authorized(header: string | undefined, secret: string): boolean {
  const want = Buffer.from(`Bearer ${secret}`);
  const got = Buffer.from(header ?? '');
  return got.length === want.length && timingSafeEqual(got, want);
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) return undefined;
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function reply(res: http.ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain' }).end(text);
}
