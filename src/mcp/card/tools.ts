import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ChatRun } from '../../core/state';
import { cardInputs, type CardInputs, type CardResults } from './contract';
import type { LiveCalls } from './live';
import { CARD_TOOL } from './names';
import { fileForCard, tablePage } from './runFiles';

/** A stored run as its card may read it: its saved files, by name, and where each one is. */
export interface CardRun extends ChatRun {
  files: readonly { name: string; size: number; mediaType?: string }[];
  /** The stored file's path (the store's own rules for a name: it never leaves the run's folder). */
  filePath(name: string): string;
}

/** What the card's tools need of the host: the running calls, the stored runs, and its own actions. */
export interface CardDoor {
  live: LiveCalls;
  /** The run a card token names, when the host's store made it and the run is still stored. */
  run(card: string): CardRun | undefined;
  /** Opens a file in the editor, saves it into the workspace, or opens the chat's runs as a notebook. */
  act(run: CardRun, name: string | undefined, action: CardInputs['action']['action']): Promise<CardResults['action']>;
}

const DESCRIPTIONS: Record<keyof typeof CARD_TOOL, string> = {
  live: "The run card's live view: claims the running call whose input is exactly this one.",
  poll: 'The run card reads what its claimed call printed since the given offsets.',
  stop: 'The run card stops its claimed call (the person pressed Stop).',
  file: "The run card reads a saved file of its run to show it (an image).",
  table: "The run card reads a page of a saved table's rows.",
  action: 'The run card opens a saved file, saves it into the workspace, or opens the chat as a notebook.',
};

/**
 * The card's tools as `tools/list` shows them: app-only (MCP Apps `visibility: ["app"]`), so a host
 * lists them to the card and never to the model. Each also refuses a call that comes the model's
 * way (handleCardCall), and each asks for the claim or card token only the card holds.
 */
export function cardToolDefinitions(): Tool[] {
  return (Object.keys(CARD_TOOL) as (keyof typeof CARD_TOOL)[]).map((key) => ({
    name: CARD_TOOL[key],
    description: DESCRIPTIONS[key],
    inputSchema: z.toJSONSchema(cardInputs[key]) as Tool['inputSchema'],
    _meta: { ui: { visibility: ['app'] } },
    annotations: { readOnlyHint: key !== 'stop' && key !== 'action', openWorldHint: false },
  }));
}

export function isCardTool(name: string): boolean {
  return (Object.values(CARD_TOOL) as string[]).includes(name);
}

/** The card's tools are the person's, through the card: a call the host made for the model carries the chat's id. */
export const MODEL_CALL_META = 'vscode.conversationId';

export async function handleCardCall(door: CardDoor, name: string, args: unknown, meta: Record<string, unknown> | undefined): Promise<CallToolResult> {
  if (meta && MODEL_CALL_META in meta) return refused(`${name} is the run card's own tool, not one the model may call.`);
  const key = (Object.keys(CARD_TOOL) as (keyof typeof CARD_TOOL)[]).find((k) => CARD_TOOL[k] === name)!;
  const parsed = cardInputs[key].safeParse(args ?? {});
  if (!parsed.success) return refused(`${name}: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'input'} ${i.message}`).join('; ')}`);
  const input = parsed.data as never;
  switch (key) {
    case 'live': {
      const claim = door.live.claim((input as CardInputs['live']).input);
      return ok(claim ? { claim } : {});
    }
    case 'poll': {
      const { claim, stdoutFrom, stderrFrom } = input as CardInputs['poll'];
      return ok(door.live.poll(claim, stdoutFrom, stderrFrom));
    }
    case 'stop':
      return ok({ stopping: door.live.stop((input as CardInputs['stop']).claim) });
    case 'file':
    case 'table':
    case 'action':
      return runCall(door, key, input);
  }
}

async function runCall(door: CardDoor, key: 'file' | 'table' | 'action', input: CardInputs['file'] | CardInputs['table'] | CardInputs['action']): Promise<CallToolResult> {
  const run = door.run(input.card);
  if (!run) return refused("This run is no longer stored (deleted, or removed to keep within the storage budget), or the card is not one of this window's.");
  const name = 'name' in input ? input.name : undefined;
  const file = name === undefined ? undefined : run.files.find((f) => f.name === name);
  if (name !== undefined && !file) return refused(`${name} is not a saved file of this run.`);
  if (key === 'action') return ok(await door.act(run, name, (input as CardInputs['action']).action));
  const at = run.filePath(file!.name);
  if (key === 'file') {
    const read = fileForCard(at, file!.mediaType);
    return 'refused' in read ? refused(read.refused) : ok(read);
  }
  const t = input as CardInputs['table'];
  return ok(tablePage(at, file!.name, { offset: t.offset, limit: t.limit, ...(t.sort ? { sort: t.sort } : {}) }));
}

function ok(result: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
}

function refused(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
