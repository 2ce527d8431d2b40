import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, CallToolResultSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TOOL_NAME } from '../core/toolDescription';
import { successResult, toolDefinition } from './toolResult';

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

/**
 * The SDK's own checks of a call, taken once on made-up values before the first call: the `Server`
 * parses each tools/call request and each result with these zod schemas, and zod compiles a schema
 * at its first parse (3 ms of an MCP server's first call in a CPU profile, 0.2 ms of a later one).
 * Pure: nothing is sent. Returns whether both values passed, as the SDK would find them.
 */
export function rehearseProtocol(): { request: boolean; result: boolean } {
  const request = CallToolRequestSchema.safeParse({ method: 'tools/call', params: { name: TOOL_NAME, arguments: { code: 'print(1)' }, _meta: { progressToken: 1 } } });
  const result = CallToolResultSchema.safeParse(successResult('stdout:\n1', []));
  return { request: request.success, result: result.success };
}
