import type { CallMeta } from './server';

/** Where VS Code names the chat a tool call comes from (from the chat's session resource). */
export const CONVERSATION_META = 'vscode.conversationId';

/**
 * The chat an MCP call comes from, as the same key VS Code's language-model tool gets for that
 * chat (core/session.ts): VS Code sends a local chat's session id, decoded from its session
 * resource `vscode-chat-session://local/<base64url id>`, and any other chat's resource whole. So a
 * chat keeps one sandbox, one state and one history whichever way its calls come. Undefined when
 * the host names no chat (another client, or a call made outside a chat).
 */
export function chatKeyOf(meta: CallMeta): string | undefined {
  const id = meta?.[CONVERSATION_META];
  if (typeof id !== 'string' || id.length === 0 || id.length > 1024) return undefined;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(id)) return `chat:${id}`;
  return `chat:vscode-chat-session://local/${Buffer.from(id, 'utf8').toString('base64url')}`;
}
