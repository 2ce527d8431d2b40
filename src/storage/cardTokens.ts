import type { ChatRun } from '../core/state';
import { RUN_ID, SESSION_ID } from './storeIndex';
import type { StateSeal } from './stateSeal';

/**
 * What a run's card in the chat holds to ask for that run's files: `<chat>.<run>.<tag>`, tagged
 * under this store's key, so it names one run of one chat and nothing a program or a model could
 * make up. It stays good while the run is stored (a chat reloaded later shows its cards again);
 * it opens only what the chat's person could open in the view.
 */
const PURPOSE = 'card';

export function cardToken(seal: StateSeal, { chat, run }: ChatRun): string {
  return `${chat}.${run}.${seal.tag(PURPOSE, [chat, run])}`;
}

/** The chat and run a card token names, when this store made it; undefined for anything else. */
export function readCardToken(seal: StateSeal, token: string): ChatRun | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [chat, run, tag] = parts as [string, string, string];
  if (!SESSION_ID.test(chat) || !RUN_ID.test(run)) return undefined;
  return seal.checkTag(PURPOSE, [chat, run], tag) ? { chat, run } : undefined;
}
