import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { TOOL_NAME } from '../core/toolDescription';
import { CARD_URI } from './card/names';
import { cardResource, cardResourceListing } from './card/resource';
import { cardToolDefinitions, handleCardCall, isCardTool, type CardDoor } from './card/tools';
import { successResult, toolDefinition } from './toolResult';

/** What the host sends with a call besides its arguments (MCP's `_meta`: a progress token, VS Code's chat id). */
export type CallMeta = Record<string, unknown> | undefined;

/** Runs one execute_code call; `signal` aborts when the client cancels it (notifications/cancelled). */
export type ExecuteCodeHandler = (args: unknown, signal: AbortSignal, meta: CallMeta) => Promise<CallToolResult>;

/** The run card a server offers with execute_code (an MCP App), and what its tools need of the host. */
export interface CardOffer {
  door: CardDoor;
  /** The card's page (built by esbuild.mjs). */
  html(): string;
}

/**
 * The SDK's protocol server with execute_code as its one tool. This is the SDK's lower-level
 * `Server`, not `McpServer.registerTool`: the latter validates arguments against the zod schema
 * itself and answers a bad input with its own "MCP error -32602: Input validation error: ..."
 * before the handler runs, so the model would not get the sentence VS Code gives it. Here the
 * schema is listed as VS Code declares it and the input is parsed by the same `parseToolInput`.
 */
export function createMcpServer(version: string, options: { card?: boolean } = {}): Server {
  return new Server({ name: 'codeact-sandbox', title: 'CodeAct Sandbox', version }, { capabilities: { tools: {}, ...(options.card ? { resources: {} } : {}) } });
}

/**
 * execute_code, and with `card` the run card: execute_code links to it (`_meta.ui.resourceUri`),
 * the card's page is a resource, and the card's own tools are listed for the card alone.
 */
export function registerExecuteCode(server: Server, handler: ExecuteCodeHandler, card?: CardOffer): void {
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: card ? [{ ...toolDefinition(), _meta: { ui: { resourceUri: CARD_URI } } }, ...cardToolDefinitions()] : [toolDefinition()],
  }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const { name, _meta: meta } = request.params;
    if (card && isCardTool(name)) return handleCardCall(card.door, name, request.params.arguments, meta);
    // A tool that does not exist is a protocol error, not a result (the specification's own example).
    if (name !== TOOL_NAME) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    // No arguments at all reads as an empty object, so the model hears that `code` is missing.
    return handler(request.params.arguments ?? {}, extra.signal, meta);
  });
  if (!card) return;
  server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [cardResourceListing()] }));
  server.setRequestHandler(ReadResourceRequestSchema, (request) => {
    if (request.params.uri !== CARD_URI) throw new McpError(ErrorCode.InvalidParams, `Unknown resource: ${request.params.uri}`);
    return cardResource(card.html());
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
