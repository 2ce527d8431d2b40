import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '../../core/errors';
import type { ExecuteReport } from '../../core/executeCode';
import type { Logger } from '../../core/logger';
import { sessionDisplayName } from '../../core/session';
import { parseToolInput, type ToolInput } from '../../core/toolInput';
import type { ImageAttachment } from '../../storage/imageAttachments';
import { chatKeyOf } from '../chatKey';
import type { ExecuteCodeHandler } from '../server';
import { failureResult } from '../toolResult';
import { cardDataOf } from './data';
import type { LiveCalls } from './live';
import { CARD_META_KEY } from './names';

/** How a host runs one call for the card's door: the same way as its other door (the language-model tool). */
export interface CardCalls {
  run(call: { input: ToolInput; sessionKey: string; signal: AbortSignal; onOutput: (stream: 'stdout' | 'stderr', chunk: Buffer) => void }): Promise<{
    report: ExecuteReport;
    text: string;
    images: readonly ImageAttachment[];
    /** The stored run (its card token is made from it); absent when nothing was kept. */
    run?: { chat: string; runId: string };
  }>;
  cardToken(chat: string, runId: string): string;
  /** A call that names no chat (outside a chat): the host's own key. */
  fallbackKey: string;
  log: Logger;
  /** Whose log a failure's sentence points to. */
  client: Client;
}

/**
 * execute_code through the card's door: the call's text and images for the model, exactly as the
 * other door gives them, and the card's data in `_meta` (no model reads it). While it runs, the
 * call is live: its card can claim it, read its output and stop it (live.ts).
 */
export function cardExecuteHandler(host: CardCalls, live: LiveCalls): ExecuteCodeHandler {
  return async (args, signal, meta) => {
    let input: ToolInput;
    try {
      input = parseToolInput(args);
    } catch (e) {
      return failureResult(e, host.log, host.client);
    }
    const sessionKey = chatKeyOf(meta) ?? host.fallbackKey;
    const stopped = new AbortController();
    const call = live.begin(args, () => stopped.abort());
    try {
      const r = await host.run({ input, sessionKey, signal: AbortSignal.any([signal, stopped.signal]), onOutput: (s, chunk) => call.output(s, chunk) });
      const card = r.run ? cardDataOf(r.report, { card: host.cardToken(r.run.chat, r.run.runId), chat: sessionDisplayName(sessionKey) }) : undefined;
      return {
        content: [
          { type: 'text', text: r.text },
          // The model's to look at: the card shows the person the same image from the run's files.
          ...r.images.map((i) => ({ type: 'image' as const, data: i.bytes.toString('base64'), mimeType: i.mimeType, annotations: { audience: ['assistant' as const] } })),
        ],
        ...(card ? { _meta: { [CARD_META_KEY]: card } } : {}),
      } satisfies CallToolResult;
    } catch (e) {
      return failureResult(e, host.log, host.client);
    } finally {
      call.end();
    }
  };
}
