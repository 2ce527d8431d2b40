import { z } from 'zod';
import { classifyName } from '../core/files/names';
import { MAX_RECORDED_CONNECTIONS, type Connection } from '../core/network';
import type { StateRecord } from '../core/state';

/**
 * run.json: what one execute_code call did, kept beside the files it produced. It is read back
 * from disk, where anything may have happened to it, so it is validated like any other input;
 * a record that fails is skipped by listings rather than trusted.
 */

// A tampered record must not turn a listed name into a path outside the run's folder.
const fileName = z.string().refine((n) => classifyName(n).kind === 'ok', 'not a plain relative path');

/** A session call's state as its record keeps it: the one StateRecord shape of core/state, as read back from disk. */
const StateRecordSchema = z.object({
  reset: z.boolean(),
  kept: z.boolean(),
  from: z.string().max(64).optional(),
  now: z.string().max(64).optional(),
  ended: z.boolean().optional(),
  /** The call started from the state another chat had after one of its runs ("Start a New Chat from Here"). */
  origin: z.object({ chat: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/), run: z.string().max(64) }).optional(),
}) satisfies z.ZodType<StateRecord>;
// ... and nothing more than it: a field added to one of them and not the other does not compile.
const sameShape: StateRecord extends z.infer<typeof StateRecordSchema> ? true : false = true;
void sameShape;

export const StoredFile = z.object({
  name: fileName,
  size: z.number().int().nonnegative(),
  /** Sniffed by the host from the file's first bytes; never taken from the program. */
  mediaType: z.string().optional(),
});
export type StoredFile = z.infer<typeof StoredFile>;

export const RunRecord = z.object({
  version: z.literal(1),
  runId: z.string(),
  sessionKeyDigest: z.string(),
  sessionLabel: z.string(),
  startedAt: z.iso.datetime(),
  durationMs: z.number().nonnegative(),
  image: z.string(),
  /** The container that ran the program (after a replacement, the new one); absent in older records. */
  sandboxId: z.string().optional(),
  /** The OCI runtime the sandbox ran under (runsc, runc, ...); absent in older records. */
  runtime: z.string().optional(),
  exitCode: z.number().int().nullable(),
  timedOut: z.boolean(),
  cancelled: z.boolean(),
  program: z.string(),
  /** Exactly what the model received. */
  resultText: z.string(),
  filesIn: z.array(fileName),
  files: z.array(StoredFile),
  /** When set, the whole stream is kept as stdout.txt / stderr.txt beside run.json. */
  stdoutTruncated: z.boolean(),
  stderrTruncated: z.boolean(),
  // Absent in records written before notebooks could be exported: those are shown by resultText.
  /** Each stream as the model saw it (cut to its share of the budget), and its whole size. */
  stdout: z.string().optional(),
  stderr: z.string().optional(),
  stdoutBytes: z.number().int().nonnegative().optional(),
  stderrBytes: z.number().int().nonnegative().optional(),
  oomKilled: z.boolean().optional(),
  outputLimited: z.boolean().optional(),
  /** The limits the run had. */
  timeoutMs: z.number().int().positive().optional(),
  memoryMb: z.number().int().positive().optional(),
  /** The directory it ran in inside the sandbox (a replay runs it there again); absent in older records. */
  workDir: z.string().max(200).optional(),
  /**
   * Session mode only: the call started from an empty state (reset), its state was kept, and the
   * ids of the state it started from and left ('' : empty; absent in older records), which link
   * a chat's kept runs into the chain a resume replays.
   */
  state: StateRecordSchema.optional(),
  /** The store's seal over what a replay takes from this record (stateSeal.ts). */
  stateSeal: z.string().max(128).optional(),
  /** A sandbox with a network allow-list: each connection the program made, as the proxy saw it. */
  network: z
    .object({
      connections: z
        .array(
          z.object({
            time: z.number(),
            host: z.string().max(300),
            port: z.number().int(),
            method: z.string().max(32),
            allowed: z.boolean(),
            reason: z.enum(['not listed', 'denied', 'address', 'private address', 'port', 'sni', 'not tls', 'scheme', 'not https', 'malformed', 'stand-in', 'upstream']).optional(),
            sni: z.string().max(300).optional(),
            bytesOut: z.number().nonnegative(),
            bytesIn: z.number().nonnegative(),
            serverAddress: z.string().max(64).optional(),
            open: z.boolean().optional(),
            replayOf: z.string().max(64).optional(),
            credential: z.boolean().optional(),
            /** An entry that stands for this many connections to its host (those between the first and the last ones). */
            count: z.number().int().positive().optional(),
          }) satisfies z.ZodType<Connection>,
        )
        .max(MAX_RECORDED_CONNECTIONS),
      complete: z.boolean(),
      omitted: z.object({ allowed: z.number().int().nonnegative(), blocked: z.number().int().nonnegative() }).optional(),
    })
    .optional(),
});
export type RunRecord = z.infer<typeof RunRecord>;

/** What the caller supplies at the end of a run; the writer fills in identity and the files it stored. */
export type RunOutcome = Omit<RunRecord, 'version' | 'runId' | 'sessionKeyDigest' | 'sessionLabel' | 'files'>;
