/**
 * The run card's contract: what a finished call hands its card (in the result's `_meta`, which no
 * model reads), and the app-only tools the card calls (MCP Apps `visibility: ["app"]`: a host
 * lists them to the card, never to the model). Shared by the server (src/mcp/card/tools.ts) and
 * the card's page (src/mcp/card/page/), so both read one shape. Plain data and zod, nothing else:
 * the page imports only its types (names.ts holds the constants it shares, without zod).
 */
import { z } from 'zod';

import { CARD_TABLE_PAGE } from './names';

const token = z.string().regex(/^[A-Za-z0-9._-]{16,200}$/);
const fileName = z.string().min(1).max(1024);

export const cardFile = z.object({
  name: fileName,
  size: z.number().int().nonnegative(),
  mediaType: z.string().max(200).optional(),
  /** How the card shows it: an image, a table (CSV, TSV), or a chip only. */
  kind: z.enum(['image', 'table', 'other']),
});

export const cardConnection = z.object({
  host: z.string().max(300),
  port: z.number().int(),
  allowed: z.boolean(),
  reason: z.string().max(40).optional(),
  bytesOut: z.number().nonnegative(),
  bytesIn: z.number().nonnegative(),
  count: z.number().int().positive().optional(),
  open: z.boolean().optional(),
});

/** A finished call, as its card shows it. */
export const cardData = z.object({
  v: z.literal(1),
  /** Lets the card ask for this run's files (card_file, card_table, card_action); bound to the chat and run. */
  card: token,
  status: z.enum(['ok', 'failed', 'timeout', 'stopped', 'memory', 'output']),
  exitCode: z.number().int().nullable(),
  durationMs: z.number().nonnegative(),
  startedAt: z.string().max(40),
  /** The sandbox's image and the chat's name as the person knows them. */
  image: z.string().max(300),
  chat: z.string().max(200),
  stdout: z.string(),
  stderr: z.string(),
  /** Characters of each stream left out of the card (its start and end are shown). */
  stdoutOmitted: z.number().int().nonnegative(),
  stderrOmitted: z.number().int().nonnegative(),
  files: z.array(cardFile).max(100),
  /** Declared outputs not saved, and why ("not written", "over the limit of ..."). */
  notSaved: z.array(z.object({ name: fileName, reason: z.string().max(300) })).max(100),
  network: z.object({ connections: z.array(cardConnection).max(2000), omitted: z.number().int().nonnegative() }).optional(),
  /** The sentences after the streams that the model reads too (the state line, a missing module, ...). */
  notes: z.array(z.string().max(4000)).max(20),
});
export type CardData = z.infer<typeof cardData>;

/** The app-only tools' inputs and results (each result is the tool result's structuredContent). */
export const cardInputs = {
  live: z.object({ input: z.record(z.string(), z.unknown()) }),
  poll: z.object({ claim: token, stdoutFrom: z.number().int().nonnegative(), stderrFrom: z.number().int().nonnegative() }),
  stop: z.object({ claim: token }),
  file: z.object({ card: token, name: fileName }),
  table: z.object({
    card: token,
    name: fileName,
    offset: z.number().int().nonnegative(),
    limit: z.number().int().min(1).max(CARD_TABLE_PAGE),
    sort: z.object({ column: z.number().int().nonnegative(), descending: z.boolean() }).optional(),
  }),
  action: z.object({ card: token, name: fileName.optional(), action: z.enum(['open', 'save', 'notebook']) }),
};

export const cardResults = {
  live: z.object({ claim: token.optional() }),
  poll: z.object({
    running: z.boolean(),
    elapsedMs: z.number().nonnegative(),
    stdout: z.string(),
    stderr: z.string(),
    /** Where the next poll starts (characters of each stream seen so far). */
    stdoutFrom: z.number().int().nonnegative(),
    stderrFrom: z.number().int().nonnegative(),
  }),
  stop: z.object({ stopping: z.boolean() }),
  file: z.object({ mediaType: z.string().max(200), size: z.number().int().nonnegative(), base64: z.string() }),
  table: z.object({
    columns: z.array(z.string()),
    rows: z.array(z.array(z.string())),
    /** Data rows in the file (the header not counted). */
    total: z.number().int().nonnegative(),
    offset: z.number().int().nonnegative(),
    /** The file was cut at the table limit: rows past it are not shown. */
    truncated: z.boolean(),
  }),
  action: z.object({ done: z.boolean(), message: z.string().max(500) }),
};
export type CardInputs = { [K in keyof typeof cardInputs]: z.infer<(typeof cardInputs)[K]> };
export type CardResults = { [K in keyof typeof cardResults]: z.infer<(typeof cardResults)[K]> };
