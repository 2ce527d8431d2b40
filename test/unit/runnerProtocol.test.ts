import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { z } from 'zod';
import {
  FRAME_HEADER_BYTES,
  FrameDecoder,
  MAX_DATA_PAYLOAD,
  MAX_JSON_PAYLOAD,
  MAX_REQUEST_PAYLOAD,
  ProtocolError,
  declinedReplySchema,
  encodeFrame,
  encodeRunRequest,
  exitReplySchema,
  helloReplySchema,
  parseReply,
  preloadModuleSchema,
  runnerConfig,
  startedReplySchema,
} from '../../src/core/runnerProtocol';

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const exit = { t: 'exit', exitCode: 3, signal: null, killed: false, limited: false, orphans: false };

describe('runner protocol (unit)', () => {
  describe('frames', () => {
    it('round-trips frames split at every byte boundary', () => {
      const frames = [
        encodeFrame('O', 7, Buffer.from('hello\n')),
        encodeFrame('E', 7, Buffer.alloc(0)),
        encodeFrame('X', 7, json(exit)),
        encodeFrame('H', 0, json({ t: 'hello' })),
      ];
      const all = Buffer.concat(frames);
      for (let cut = 0; cut <= all.length; cut++) {
        const d = new FrameDecoder();
        const got = [...d.push(all.subarray(0, cut)), ...d.push(all.subarray(cut))];
        assert.deepEqual(
          got.map((f) => [f.kind, f.id, f.payload.toString()]),
          [
            ['O', 7, 'hello\n'],
            ['E', 7, ''],
            ['X', 7, JSON.stringify(exit)],
            ['H', 0, JSON.stringify({ t: 'hello' })],
          ],
          `cut at ${cut}`,
        );
        assert.equal(d.pendingBytes, 0);
      }
    });

    it('decodes byte by byte without holding more than one frame', () => {
      const payload = Buffer.alloc(MAX_DATA_PAYLOAD, 0x61);
      const all = Buffer.concat([encodeFrame('O', 1, payload), encodeFrame('O', 1, payload)]);
      const d = new FrameDecoder();
      let frames = 0;
      let maxPending = 0;
      for (let i = 0; i < all.length; i += 997) {
        frames += d.push(all.subarray(i, i + 997)).length;
        maxPending = Math.max(maxPending, d.pendingBytes);
      }
      assert.equal(frames, 2);
      assert.ok(maxPending < FRAME_HEADER_BYTES + MAX_DATA_PAYLOAD + 997, `held ${maxPending} bytes`);
    });

    it('accepts the largest payload of each kind and refuses one byte more', () => {
      assert.equal(new FrameDecoder().push(encodeFrame('O', 1, Buffer.alloc(MAX_DATA_PAYLOAD))).length, 1);
      assert.equal(new FrameDecoder().push(encodeFrame('X', 1, Buffer.alloc(MAX_JSON_PAYLOAD))).length, 1);
      // The length is checked from the header alone: nothing of the body needs to arrive.
      const big = encodeFrame('O', 1, Buffer.alloc(MAX_DATA_PAYLOAD + 1)).subarray(0, FRAME_HEADER_BYTES);
      assert.throws(() => new FrameDecoder().push(big), /65537-byte payload over the 65536-byte limit of kind O/);
      const bigJson = encodeFrame('H', 0, Buffer.alloc(MAX_JSON_PAYLOAD + 1)).subarray(0, FRAME_HEADER_BYTES);
      assert.throws(() => new FrameDecoder().push(bigJson), ProtocolError);
      const huge = Buffer.from(encodeFrame('E', 1).subarray(0, FRAME_HEADER_BYTES));
      huge.writeUInt32BE(0xffffffff, 8);
      assert.throws(() => new FrameDecoder().push(huge), /4294967295-byte payload/);
    });

    it('refuses bad magic, unknown kinds, host kinds and reserved flags, and stays failed', () => {
      const good = encodeFrame('O', 1, Buffer.from('x'));
      const cases: [Buffer, RegExp][] = [
        [Buffer.concat([Buffer.from('XX'), good.subarray(2)]), /bad magic/],
        [Buffer.from(good).fill(0x5a, 2, 3), /unknown kind 0x5a/],
        [Buffer.from(good).fill(0x72, 2, 3), /unknown kind 0x72/], // 'r' is a request, never a reply
        [Buffer.from(good).fill(1, 3, 4), /reserved flags/],
        [Buffer.from('stdout:\nhello world\n'), /bad magic/],
      ];
      for (const [bytes, message] of cases) {
        const d = new FrameDecoder();
        assert.throws(() => d.push(bytes), message);
        // A channel that lied once is not read again, even good frames.
        assert.throws(() => d.push(good), message);
      }
    });

    it('a program printing protocol frames cannot make them frames: they are inside an O payload', () => {
      const forged = encodeFrame('X', 9, json({ ...exit, exitCode: 0 }));
      const d = new FrameDecoder();
      const frames = d.push(encodeFrame('O', 9, forged));
      assert.equal(frames.length, 1);
      assert.equal(frames[0]!.kind, 'O');
      assert.deepEqual(frames[0]!.payload, forged);
    });

    it('encodes only what the header can say', () => {
      assert.throws(() => encodeFrame('rr', 1), /one character/);
      assert.throws(() => encodeFrame('r', -1), /out of range/);
      assert.throws(() => encodeFrame('r', 2 ** 32), /out of range/);
      assert.deepEqual([...encodeFrame('k', 258).subarray(0, FRAME_HEADER_BYTES)], [0x43, 0x58, 0x6b, 0, 0, 0, 1, 2, 0, 0, 0, 0]);
    });
  });

  describe('replies', () => {
    const hello = { t: 'hello', v: 1, nonce: 'ab', pid: 1, python: '3.11.2', usable: true, preloaded: ['numpy'], missing: [], dirty: [] };

    it('parses valid replies', () => {
      assert.deepEqual(parseReply(helloReplySchema, json(hello), 'hello'), hello);
      assert.deepEqual(parseReply(exitReplySchema, json(exit), 'exit'), exit);
      assert.deepEqual(parseReply(declinedReplySchema, json({ t: 'declined', reason: 'shadows json', written: true }), 'declined'), {
        t: 'declined',
        reason: 'shadows json',
        written: true,
      });
    });

    it('refuses replies of the wrong shape', () => {
      const bad: [unknown, string][] = [
        [{ ...exit, exitCode: 256 }, 'exit code out of range'],
        [{ ...exit, exitCode: -1 }, 'negative exit code'],
        [{ ...exit, exitCode: '0' }, 'exit code as a string'],
        [{ ...exit, extra: 1 }, 'unknown field'],
        [{ ...exit, t: 'hello' }, 'wrong type tag'],
        [{ t: 'exit' }, 'missing fields'],
        [[exit], 'an array'],
      ];
      for (const [value, why] of bad) assert.throws(() => parseReply(exitReplySchema, json(value), 'exit'), ProtocolError, why);
      assert.throws(() => parseReply(exitReplySchema, Buffer.from('{"t":"exit",'), 'exit'), /not JSON/);
      assert.throws(() => parseReply(helloReplySchema, json({ ...hello, reason: 'x'.repeat(2001) }), 'hello'), ProtocolError);
    });
  });

  describe('requests and config', () => {
    it('writes a run request the runner parses without imports', () => {
      const r = encodeRunRequest({ dir: '/sandbox/runs/0001-abcdef', code: Buffer.from('print(1)\n\nprint(2)'), maxOutputBytes: 64, orphanGraceMs: 1000 });
      assert.equal(r.toString(), 'dir=/sandbox/runs/0001-abcdef\nmax=64\ngrace=1000\ncode=1\n\nprint(1)\n\nprint(2)');
      const noCode = encodeRunRequest({ dir: '/sandbox/runs/12345-000000', maxOutputBytes: 0, orphanGraceMs: 0 });
      assert.equal(noCode.toString(), 'dir=/sandbox/runs/12345-000000\nmax=0\ngrace=0\ncode=0\n\n');
    });

    it('refuses directories outside the runs folder and bad limits', () => {
      for (const dir of ['/sandbox/runs/../etc', '/etc', '/sandbox/runs/0001-abcdef\ncode=1', '/sandbox/runs/01-abcdef', '/sandbox/runs/0001-ABCDEF']) {
        assert.throws(() => encodeRunRequest({ dir, maxOutputBytes: 1, orphanGraceMs: 1 }), /not a run directory/, dir);
      }
      assert.throws(() => encodeRunRequest({ dir: '/sandbox/runs/0001-abcdef', maxOutputBytes: 1.5, orphanGraceMs: 1 }), /non-negative integers/);
    });

    it('passes only module names to the runner', () => {
      assert.equal(runnerConfig(['numpy', 'matplotlib.pyplot', 'numpy'], 'start'), 'preload=numpy,matplotlib.pyplot');
      assert.equal(runnerConfig(['numpy', 'matplotlib.pyplot', 'numpy'], 'used'), 'preload=;learn=numpy,matplotlib.pyplot');
      assert.equal(runnerConfig(['os;import evil', 'a,b', '../x', '', 'x=1'], 'start'), 'preload=');
      assert.equal(runnerConfig(['os;import evil', 'a,b', '../x', '', 'x=1'], 'used'), 'preload=;learn=');
      // What this window's programs imported: preloaded at once, in the list's order; only names of the list.
      assert.equal(runnerConfig(['numpy', 'pandas', 'scipy'], 'used', ['scipy', 'numpy', 'evil', 'os;x']), 'preload=numpy,scipy;learn=numpy,pandas,scipy');
      assert.equal(runnerConfig(['numpy', 'pandas'], 'start', ['numpy']), 'preload=numpy,pandas');
      assert.equal(preloadModuleSchema.safeParse('pandas').success, true);
      assert.equal(preloadModuleSchema.safeParse('pandas; x').success, false);
    });
  });
});

/** A fixture's bytes: hex, or a list of hex strings and {hex, times} repeats. */
type BytesSpec = string | (string | { hex: string; times: number })[];
interface Golden {
  limits: { headerBytes: number; maxDataPayload: number; maxJsonPayload: number; maxRequestPayload: number };
  hostToRunner: { name: string; bytes: string; kind: string; id: number; nonce?: string; request?: { dir: string; code?: string; maxOutputBytes: number; orphanGraceMs: number; state?: { reset: boolean } } }[];
  runnerToHost: { name: string; bytes: string; kind: string; id: number; reply?: unknown; payload?: string }[];
  hostFrames: { name: string; bytes: BytesSpec; kind: string; id: number; payload: BytesSpec }[];
  hostFrameErrors: { name: string; bytes: BytesSpec; error: string }[];
  hostReplies: { name: string; bytes: BytesSpec; reply: unknown }[];
  hostReplyErrors: { name: string; bytes: BytesSpec; error: string }[];
}

/** The frames both ends are held to: test/python checks the runner's end against the same file. */
const golden = JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/runner-frames.json'), 'utf8')) as Golden;

function bytesOf(spec: BytesSpec): Buffer {
  const parts = typeof spec === 'string' ? [spec] : spec;
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'hex') : Buffer.from(p.hex.repeat(p.times), 'hex'))));
}

const REPLY: Record<string, [z.ZodType<unknown>, string]> = {
  H: [helloReplySchema, 'hello'],
  S: [startedReplySchema, 'started'],
  X: [exitReplySchema, 'exit'],
  D: [declinedReplySchema, 'declined'],
};

function onlyFrame(bytes: Buffer) {
  const d = new FrameDecoder();
  const frames = d.push(bytes);
  assert.equal(frames.length, 1);
  assert.equal(d.pendingBytes, 0);
  return frames[0]!;
}

function reply(kind: string, payload: Buffer): unknown {
  const [schema, what] = REPLY[kind]!;
  return parseReply(schema, payload, what);
}

describe('runner protocol: golden frames (test/fixtures/runner-frames.json)', () => {
  it('has the limits the runner is tested against', () => {
    assert.deepEqual(golden.limits, {
      headerBytes: FRAME_HEADER_BYTES,
      maxDataPayload: MAX_DATA_PAYLOAD,
      maxJsonPayload: MAX_JSON_PAYLOAD,
      maxRequestPayload: MAX_REQUEST_PAYLOAD,
    });
  });

  const payloadOf = (g: Golden['hostToRunner'][number]): Buffer => {
    if (g.kind === 'h') return Buffer.from(`nonce=${g.nonce}`, 'ascii');
    if (g.kind !== 'r') return Buffer.alloc(0);
    const { code, ...limits } = g.request!;
    return encodeRunRequest({ ...limits, ...(code !== undefined ? { code: Buffer.from(code, 'utf8') } : {}) });
  };
  for (const g of golden.hostToRunner) {
    it(`sends: ${g.name}`, () => {
      const payload = payloadOf(g);
      assert.equal(encodeFrame(g.kind, g.id, payload).toString('hex'), g.bytes);
    });
  }

  for (const g of golden.runnerToHost) {
    it(`reads the runner's ${g.name}`, () => {
      const frame = onlyFrame(bytesOf(g.bytes));
      assert.deepEqual([frame.kind, frame.id], [g.kind, g.id]);
      if (g.reply !== undefined) assert.deepEqual(reply(frame.kind, frame.payload), g.reply);
      else assert.equal(frame.payload.toString('hex'), g.payload);
    });
  }

  it("reads all of the runner's golden frames from one stream split at every byte", () => {
    const stream = Buffer.concat(golden.runnerToHost.map((g) => bytesOf(g.bytes)));
    for (let cut = 0; cut <= stream.length; cut += 7) {
      const d = new FrameDecoder();
      const got = [...d.push(stream.subarray(0, cut)), ...d.push(stream.subarray(cut))];
      assert.deepEqual(
        got.map((f) => [f.kind, f.id, f.payload.toString('hex')]),
        golden.runnerToHost.map((g) => [g.kind, g.id, bytesOf(g.bytes).subarray(FRAME_HEADER_BYTES).toString('hex')]),
        `cut at ${cut}`,
      );
    }
  });

  for (const g of golden.hostFrames) {
    it(`reads ${g.name}`, () => {
      const frame = onlyFrame(bytesOf(g.bytes));
      assert.deepEqual([frame.kind, frame.id], [g.kind, g.id]);
      assert.ok(frame.payload.equals(bytesOf(g.payload)));
    });
  }

  for (const g of golden.hostFrameErrors) {
    it(`refuses ${g.name}`, () => {
      assert.throws(() => new FrameDecoder().push(bytesOf(g.bytes)), { name: 'ProtocolError', message: g.error });
    });
  }

  for (const g of golden.hostReplies) {
    it(`parses a reply with ${g.name}`, () => {
      const frame = onlyFrame(bytesOf(g.bytes));
      assert.deepEqual(reply(frame.kind, frame.payload), g.reply);
    });
  }

  for (const g of golden.hostReplyErrors) {
    it(`refuses a reply: ${g.name}`, () => {
      const frame = onlyFrame(bytesOf(g.bytes));
      assert.throws(() => reply(frame.kind, frame.payload), (e: unknown) => e instanceof ProtocolError && e.message === g.error);
    });
  }
});
