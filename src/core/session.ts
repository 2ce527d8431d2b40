import { createHash } from 'node:crypto';

/**
 * The sandbox key comes from the host's invocation context, never from the model.
 *
 * VS Code passes `options.toolInvocationToken`, an opaque object. Observed shapes:
 * - current builds (1.10x-1.13x): `{ sessionResource: Uri('vscode-chat-session://local/<base64 id>') }`,
 *   distinct per chat;
 * - older builds: `{ sessionId: '<id>', ... }`.
 * Read it defensively: anything else means "no chat session" and the caller falls back to one
 * sandbox per window.
 */
export function sessionKeyFromToken(token: unknown): string | undefined {
  if (token === null || typeof token !== 'object') return undefined;
  const t = token as Record<string, unknown>;
  const resource = uriToString(t.sessionResource) ?? uriToString(t.chatSessionResource);
  if (resource) return `chat:${resource}`;
  if (typeof t.sessionId === 'string' && t.sessionId.length > 0) return `chat:${t.sessionId}`;
  return undefined;
}

function uriToString(value: unknown): string | undefined {
  if (typeof value === 'string') return value.length > 0 ? value : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as Record<string, unknown>;
  // A vscode.Uri: its toString() is the canonical form.
  if (typeof v.scheme === 'string' && typeof v.toString === 'function' && v.toString !== Object.prototype.toString) {
    return String(value);
  }
  // Plain UriComponents (as they arrive over the extension host protocol).
  if (typeof v.external === 'string' && v.external.length > 0) return v.external;
  if (typeof v.scheme === 'string' && typeof v.path === 'string') {
    const authority = typeof v.authority === 'string' ? v.authority : '';
    return `${v.scheme}://${authority}${v.path}`;
  }
  return undefined;
}

/** A short, stable, label-safe digest of a session key (keys may hold ids the user never sees). */
export function sessionDigest(sessionKey: string): string {
  return createHash('sha256').update(sessionKey).digest('hex').slice(0, 16);
}

/**
 * A short name for people: the start of the chat's session id when the key is a VS Code chat
 * resource, else the digest.
 */
export function sessionDisplayName(sessionKey: string): string {
  const m = /^chat:vscode-chat-session:\/\/[^/]*\/([A-Za-z0-9+/=_-]+)$/.exec(sessionKey);
  if (m) {
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
    if (/^[0-9a-f-]{8,}$/i.test(decoded)) return `chat ${decoded.slice(0, 8)}`;
  }
  if (sessionKey.startsWith('window:')) return 'this window';
  if (sessionKey.startsWith('cli:')) return `session ${sessionKey.slice(4)}`;
  return `session ${sessionDigest(sessionKey).slice(0, 8)}`;
}
