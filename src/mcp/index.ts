/**
 * The MCP server, host-neutral: its factory (execute_code, and the run card with its page and its
 * own tools), the chat a call comes from, and the loopback HTTP door a host process opens for its
 * own window. A host builds on these (src/vscode's run card); the command line's stdio server is
 * serve.ts, which the command line reaches on its own.
 */
export { createMcpServer, registerExecuteCode, type CallMeta, type CardOffer, type ExecuteCodeHandler } from './server';
export { chatKeyOf, CONVERSATION_META } from './chatKey';
export { openLoopback, type LoopbackDoor } from './http';
export { cardExecuteHandler, type CardCalls } from './card/call';
export { LiveCalls } from './card/live';
export { type CardDoor, type CardRun } from './card/tools';
export { CARD_META_KEY, CARD_TOOL, CARD_URI } from './card/names';
export { cardHtml } from './card/page/html';
