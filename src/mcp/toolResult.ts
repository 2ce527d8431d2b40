import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { ToolError, describeError, isToolError, type Client } from '../core/errors';
import type { Logger } from '../core/logger';
import { TOOL_DESCRIPTION, TOOL_NAME, TOOL_TITLE } from '../core/toolDescription';
import { toolInputJsonSchema } from '../core/toolInput';
import type { ImageAttachment } from '../storage/imageAttachments';

/** execute_code as `tools/list` shows it: the name, description and input schema VS Code declares. */
export function toolDefinition(): Tool {
  return { name: TOOL_NAME, title: TOOL_TITLE, description: TOOL_DESCRIPTION, inputSchema: toolInputJsonSchema() as Tool['inputSchema'] };
}

/** A finished call: exactly the text the model reads in VS Code, then the images it may look at. */
export function successResult(text: string, images: readonly ImageAttachment[]): CallToolResult {
  return {
    content: [{ type: 'text', text }, ...images.map((i) => ({ type: 'image' as const, data: i.bytes.toString('base64'), mimeType: i.mimeType }))],
  };
}

/** VS Code names its output channel here; an MCP server's log is its standard error, which clients keep. */
export const UNEXPECTED = "The sandbox failed unexpectedly. Ask the user to check the CodeAct Sandbox server's log (its standard error).";

/**
 * A failure of the tool itself (bad input, a refused file, no engine): a result the model reads,
 * marked `isError`, holding the same sentence as in VS Code. Anything that is not a ToolError is a
 * bug or an engine surprise; its detail goes to the log, never to the model.
 */
export function failureResult(e: unknown, log: Logger, client: Client = 'mcp'): CallToolResult {
  let message: string;
  if (isToolError(e)) {
    message = e.messageFor(client);
  } else {
    log.error(`execute_code: ${describeError(e)}`);
    message = client === 'mcp' ? UNEXPECTED : new ToolError('sandbox_failed', 'The sandbox failed unexpectedly.', { seeLog: true }).messageFor(client);
  }
  return { content: [{ type: 'text', text: message }], isError: true };
}
