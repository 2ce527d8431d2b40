import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TOOL_NAME } from '../core/toolDescription';
import { toolDefinition } from './toolResult';

/** Runs one execute_code call; `signal` aborts when the client cancels it (notifications/cancelled). */
export type ExecuteCodeHandler = (args: unknown, signal: AbortSignal) => Promise<CallToolResult>;

/**
 * The SDK's protocol server with execute_code as its one tool. This is the SDK's lower-level
 * `Server`, not `McpServer.registerTool`: the latter validates arguments against the zod schema
 * itself and answers a bad input with its own "MCP error -32602: Input validation error: ..."
 * before the handler runs, so the model would not get the sentence VS Code gives it. Here the
 * schema is listed as VS Code declares it and the input is parsed by the same `parseToolInput`.
 */
export function createMcpServer(version: string): Server {
  return new Server({ name: 'codeact-sandbox', title: 'CodeAct Sandbox', version }, { capabilities: { tools: {} } });
}

export function registerExecuteCode(server: Server, handler: ExecuteCodeHandler): void {
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [toolDefinition()] }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    // A tool that does not exist is a protocol error, not a result (the specification's own example).
    if (request.params.name !== TOOL_NAME) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    // No arguments at all reads as an empty object, so the model hears that `code` is missing.
    return handler(request.params.arguments ?? {}, extra.signal);
  });
}
