import type { Logger } from '../core/logger';
import { cardExecuteHandler, createMcpServer, LiveCalls, openLoopback, registerExecuteCode, type CardCalls, type CardDoor, type CardRun, type LoopbackDoor } from '../mcp';
import type { ArtifactStore } from '../storage/artifactStore';
import { VERSION } from '../version';
import type { WindowHost } from './windowHost';

export type CardDoorHandle = LoopbackDoor;

export interface CardServerOptions {
  host: WindowHost;
  store: ArtifactStore;
  log: Logger;
  /** A call that names no chat: the window's own key (as the plain tool uses). */
  windowKey: string;
  /** The card's page (the build's). */
  html(): string;
  /** The card's buttons, carried out by the view's own commands (cardDoor.ts). */
  act: CardDoor['act'];
}

/**
 * The window's MCP server with the run card, on a loopback door: each client session a server of
 * its own, all over the window's one host (WindowHost) and store. No `vscode` here.
 */
export function openCardDoor(o: CardServerOptions): Promise<CardDoorHandle> {
  const live = new LiveCalls();
  const door: CardDoor = { live, run: (card) => storedRun(o.store, card), act: o.act };
  const calls: CardCalls = {
    run: async (c) => {
      const r = await o.host.call(c);
      return { report: r.report, text: r.text, images: r.images, ...(r.run ? { run: { chat: r.run.chat, runId: r.run.runId } } : {}) };
    },
    cardToken: (chat, runId) => o.store.cardToken(chat, runId),
    fallbackKey: o.windowKey,
    log: o.log,
    client: 'vscode',
  };
  const handler = cardExecuteHandler(calls, live);
  return openLoopback(() => {
    const server = createMcpServer(VERSION, { card: true });
    registerExecuteCode(server, handler, { door, html: o.html });
    return server;
  }, o.log);
}

/** The stored run a card token names, as the card's tools read it. */
function storedRun(store: ArtifactStore, card: string): CardRun | undefined {
  const at = store.readCardToken(card);
  const record = at && store.readRun(at.chat, at.run);
  if (!at || !record) return undefined;
  return { ...at, files: record.files, filePath: (name) => store.filePath(at.chat, at.run, name) };
}
