import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { describeError } from '../core/errors';
import { currentOwner, removeOrphanedSandboxes } from '../docker';
import { ArtifactStore } from '../storage/artifactStore';
import { VERSION } from '../version';
import { defaultArtifactsDir } from './cacheDir';
import { McpConnection, type McpConfig } from './connection';
import { ClientRoots } from './roots';
import { createMcpServer, registerExecuteCode } from './server';

export interface ServeOptions extends McpConfig {
  /** --artifacts; default: a folder of the user's cache. */
  artifacts: string | undefined;
}

/**
 * Serves execute_code to one MCP client over stdin/stdout until the client goes away (it closes
 * stdin, or stops the process with SIGTERM or SIGINT), then removes the connection's sandbox.
 * stdout carries the protocol only; the log goes to stderr, where clients keep a server's log.
 */
export async function serveMcp(options: ServeOptions): Promise<number> {
  const { log } = options;
  // The kind the orphan check goes by: a sandbox whose server process is gone is removed by the
  // next server start (below) or by `cleanup`; those of live servers are theirs.
  const owner = currentOwner('mcp', VERSION);
  const server = createMcpServer(VERSION);
  const roots = new ClientRoots(server, log);
  const artifacts = path.resolve(options.artifacts ?? defaultArtifactsDir());
  const connection = new McpConnection(options, {
    owner,
    sessionKey: `mcp:${randomBytes(6).toString('hex')}`,
    store: new ArtifactStore(artifacts),
    roots,
  });
  registerExecuteCode(server, (args, signal, meta) => connection.call(args, signal, meta));

  const ended = new Promise<string>((resolve) => {
    process.stdin.once('end', () => resolve('the client closed the connection'));
    process.stdin.once('close', () => resolve('the client closed the connection'));
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
    server.onclose = () => resolve('the transport closed');
  });
  await server.connect(new StdioServerTransport());
  log.info(`CodeAct Sandbox ${VERSION} serving MCP on stdio; runs and files in ${artifacts}; engine ${options.engine.description}`);
  connection.prewarm();
  void removeOrphanedSandboxes(connection.provider.docker, owner, log).then(
    (n) => n > 0 && log.info(`removed ${n} sandbox(es) left by MCP servers that are gone`),
    (e: unknown) => log.info(`orphan cleanup skipped: ${describeError(e)}`),
  );

  log.info(`shutting down: ${await ended}`);
  await connection.close();
  await server.close();
  return 0;
}
