import { z } from 'zod';

/**
 * The framed channel between the host and the warm runner inside a sandbox (resources/runner/).
 * Pure logic: encoding, bounded decoding and validation. What arrives is untrusted input: a frame
 * is rejected (and the channel given up) when its magic, kind or length is wrong, and every JSON
 * reply is checked against its schema before anything acts on it.
 *
 *   b'CX' kind(1) flags(1) id(u32 BE) length(u32 BE) payload
 */
export const FRAME_MAGIC = Buffer.from('CX', 'latin1');
export const FRAME_HEADER_BYTES = 12;
export const RUNNER_PROTOCOL_VERSION = 1;

/** Host -> runner. */
export const HOST_KIND = { hello: 'h', run: 'r', kill: 'k', ahead: 'a' } as const;
/** Runner -> host. */
export const RUNNER_KIND = { hello: 'H', started: 'S', stdout: 'O', stderr: 'E', exit: 'X', declined: 'D', ahead: 'A' } as const;

export type RunnerKind = (typeof RUNNER_KIND)[keyof typeof RUNNER_KIND];

/** Output chunks are read 64 KiB at a time by the runner; JSON replies are small. */
export const MAX_DATA_PAYLOAD = 64 * 1024;
export const MAX_JSON_PAYLOAD = 16 * 1024;
/** The runner refuses larger requests; a program is at most 200,000 characters (up to 800 KB). */
export const MAX_REQUEST_PAYLOAD = 4 * 1024 * 1024;

const KIND_LIMIT: Record<RunnerKind, number> = {
  H: MAX_JSON_PAYLOAD,
  S: MAX_JSON_PAYLOAD,
  X: MAX_JSON_PAYLOAD,
  D: MAX_JSON_PAYLOAD,
  A: MAX_JSON_PAYLOAD,
  O: MAX_DATA_PAYLOAD,
  E: MAX_DATA_PAYLOAD,
};

export interface Frame {
  kind: string;
  id: number;
  payload: Buffer;
}

export function encodeFrame(kind: string, id: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  if (kind.length !== 1) throw new Error(`frame kind must be one character: ${JSON.stringify(kind)}`);
  if (!Number.isInteger(id) || id < 0 || id > 0xffffffff) throw new Error(`frame id out of range: ${id}`);
  if (payload.length > MAX_REQUEST_PAYLOAD) throw new Error(`frame payload too large: ${payload.length} bytes`);
  const header = Buffer.alloc(FRAME_HEADER_BYTES);
  FRAME_MAGIC.copy(header, 0);
  header.write(kind, 2, 'latin1');
  header.writeUInt8(0, 3);
  header.writeUInt32BE(id, 4);
  header.writeUInt32BE(payload.length, 8);
  return Buffer.concat([header, payload]);
}

export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/**
 * Splits the runner's byte stream into frames. Memory is bounded by one frame (at most 64 KiB of
 * payload) plus what arrived with it; chunks are not concatenated until a frame is complete.
 * The first bad header throws a ProtocolError, and every later push throws too: a channel that
 * lied once is not read again.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private failed: ProtocolError | undefined;

  /** Bytes received but not yet part of a complete frame. */
  get pendingBytes(): number {
    return this.buffered;
  }

  push(chunk: Buffer): Frame[] {
    if (this.failed) throw this.failed;
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
    }
    const frames: Frame[] = [];
    for (;;) {
      if (this.buffered < FRAME_HEADER_BYTES) return frames;
      const header = this.peek(FRAME_HEADER_BYTES);
      const kind = String.fromCharCode(header[2]!);
      const length = header.readUInt32BE(8);
      const problem =
        header[0] !== FRAME_MAGIC[0] || header[1] !== FRAME_MAGIC[1]
          ? 'bad magic'
          : !(kind in KIND_LIMIT)
            ? `unknown kind 0x${header[2]!.toString(16)}`
            : header[3] !== 0
              ? 'reserved flags set'
              : length > KIND_LIMIT[kind as RunnerKind]
                ? `${length}-byte payload over the ${KIND_LIMIT[kind as RunnerKind]}-byte limit of kind ${kind}`
                : undefined;
      if (problem) {
        this.failed = new ProtocolError(`invalid frame from the runner: ${problem}`);
        this.chunks = [];
        this.buffered = 0;
        throw this.failed;
      }
      if (this.buffered < FRAME_HEADER_BYTES + length) return frames;
      const whole = this.take(FRAME_HEADER_BYTES + length);
      frames.push({ kind, id: whole.readUInt32BE(4), payload: whole.subarray(FRAME_HEADER_BYTES) });
    }
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length >= n) return this.chunks[0]!.subarray(0, n);
    return Buffer.concat(this.chunks, Math.max(n, 0)).subarray(0, n);
  }

  private take(n: number): Buffer {
    const first = this.chunks[0]!;
    let out: Buffer;
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      const parts: Buffer[] = [];
      let need = n;
      while (need > 0) {
        const c = this.chunks[0]!;
        if (c.length <= need) {
          parts.push(c);
          this.chunks.shift();
          need -= c.length;
        } else {
          parts.push(c.subarray(0, need));
          this.chunks[0] = c.subarray(need);
          need = 0;
        }
      }
      out = Buffer.concat(parts, n);
    }
    this.buffered -= n;
    return out;
  }
}

const moduleName = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
/** A module name the runner may import; nothing else reaches its config. */
export const preloadModuleSchema = z.string().max(200).regex(moduleName, 'must be a dotted Python module name');

export const helloReplySchema = z
  .object({
    t: z.literal('hello'),
    v: z.number().int(),
    nonce: z.string().max(64),
    pid: z.number().int(),
    python: z.string().max(32),
    usable: z.boolean(),
    reason: z.string().max(2000).optional(),
    preloaded: z.array(z.string().max(200)).max(200),
    missing: z.array(z.string().max(200)).max(200),
    dirty: z.array(z.string().max(400)).max(200),
  })
  .strict();

export const startedReplySchema = z.object({ t: z.literal('started'), pid: z.number().int().positive() }).strict();

const stateId = z.string().regex(/^(?:[0-9a-f]{8})?$/);

/**
 * A session call's state, as the runner saw it: the state the program started from and the one
 * the next call starts from (ids; '' is the empty state), whether this call's state was kept,
 * the pid of the process holding the state (0: none), why a call that exited 0 could not be kept,
 * and why PID 1 gave the state up.
 */
export const stateReplySchema = z
  .object({
    from: stateId,
    now: stateId,
    kept: z.boolean(),
    holder: z.number().int().min(0),
    reason: z.string().max(40).optional(),
    /** PID 1 gave the state up: its holder failed PID 1's own check (threads, processes, sockets). */
    dropped: z.string().max(40).optional(),
  })
  .strict();

export const exitReplySchema = z
  .object({
    t: z.literal('exit'),
    exitCode: z.number().int().min(0).max(255).nullable(),
    signal: z.number().int().min(1).max(64).nullable(),
    killed: z.boolean(),
    limited: z.boolean(),
    orphans: z.boolean(),
    /** The kernel killed the program for memory; absent from runners that cannot read the cgroup's OOM-kill counter. */
    oomKilled: z.boolean().optional(),
    /** Session mode only: see stateReplySchema. */
    state: stateReplySchema.optional(),
    /** Fresh mode: the runner starts over to preload these (its program imported them); greet the next one. */
    preloading: z.array(preloadModuleSchema).min(1).max(100).optional(),
  })
  .strict();

/** The runner did not start the program; `written` says whether it is in place for the plain path. */
export const declinedReplySchema = z.object({ t: z.literal('declined'), reason: z.string().max(2000), written: z.boolean() }).strict();

/** The answer to `a` (a session call is over): whether the next program's process waits, forked from the state. */
export const aheadReplySchema = z.object({ t: z.literal('ahead'), ready: z.boolean() }).strict();

export type HelloReply = z.infer<typeof helloReplySchema>;
export type StartedReply = z.infer<typeof startedReplySchema>;
export type ExitReply = z.infer<typeof exitReplySchema>;
export type StateReply = z.infer<typeof stateReplySchema>;
export type DeclinedReply = z.infer<typeof declinedReplySchema>;

/** Parses a JSON reply against its schema; throws ProtocolError on anything else. */
export function parseReply<T>(schema: z.ZodType<T>, payload: Buffer, what: string): T {
  let value: unknown;
  try {
    value = JSON.parse(payload.toString('utf8'));
  } catch {
    throw new ProtocolError(`the runner's ${what} reply is not JSON`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ProtocolError(`the runner's ${what} reply is invalid: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

/** A run directory as the sandbox names them: /sandbox/runs/NNNN-xxxxxx. */
export const RUN_DIR_PATTERN = /^\/sandbox\/runs\/[0-9]{4,9}-[0-9a-f]{6}$/;

export interface RunRequest {
  /** The call's fresh directory; the runner checks it too. */
  dir: string;
  /** The program's source, when the runner is to write program.py itself (no shared files). */
  code?: Buffer;
  /** The runner stops the program once it printed more than this in total. */
  maxOutputBytes: number;
  /** How long children may hold the output open after the program exited. */
  orphanGraceMs: number;
  /** Session mode: the program runs on the state the last kept call left, or on an empty one (`reset`). */
  state?: { reset: boolean };
}

/** key=value lines, a blank line, then the program's bytes: parseable without any import. */
export function encodeRunRequest(r: RunRequest): Buffer {
  if (!RUN_DIR_PATTERN.test(r.dir)) throw new Error(`not a run directory: ${r.dir}`);
  const ints = [r.maxOutputBytes, r.orphanGraceMs];
  if (!ints.every((n) => Number.isInteger(n) && n >= 0 && n <= Number.MAX_SAFE_INTEGER)) throw new Error('run request limits must be non-negative integers');
  const state = r.state ? `state=session\nreset=${r.state.reset ? 1 : 0}\n` : '';
  const head = `dir=${r.dir}\nmax=${r.maxOutputBytes}\ngrace=${r.orphanGraceMs}\ncode=${r.code ? 1 : 0}\n${state}\n`;
  return Buffer.concat([Buffer.from(head, 'ascii'), r.code ?? Buffer.alloc(0)]);
}

/**
 * When the runner preloads its modules: `used`, once a fresh program of this sandbox imported
 * them (in the idle time after that call), or `start`, before the first program.
 */
export const PRELOAD_WHEN = ['used', 'start'] as const;
export type PreloadWhen = (typeof PRELOAD_WHEN)[number];

/**
 * The runner's configuration, its command-line argument: `preload=a,b`, or `preload=;learn=a,b`
 * (on first use). `ahead`, on first use: modules of the list to preload at once all the same,
 * because programs of this window imported them (a spare made for the next chat): `preload=a;learn=a,b`.
 */
export function runnerConfig(preloadModules: readonly string[], when: PreloadWhen, ahead: readonly string[] = []): string {
  const mods = [...new Set(preloadModules.filter((m) => preloadModuleSchema.safeParse(m).success))];
  if (when === 'start') return `preload=${mods.join(',')}`;
  return `preload=${mods.filter((m) => ahead.includes(m)).join(',')};learn=${mods.join(',')}`;
}
