// The golden frames both ends of the runner channel are held to (test/fixtures/runner-frames.json),
// by name; test/python reads the same file for the runner's end.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** A fixture's bytes: hex, or a list of hex strings and {hex, times} repeats. */
export type BytesSpec = string | (string | { hex: string; times: number })[];

export interface GoldenRequest {
  dir: string;
  code?: string;
  maxOutputBytes: number;
  orphanGraceMs: number;
  state?: { reset: boolean };
}

interface Golden {
  hostToRunner: { name: string; bytes: string; kind: string; id: number; nonce?: string; request?: GoldenRequest }[];
  runnerToHost: { name: string; bytes: string; kind: string; id: number; reply?: unknown }[];
  hostFrameErrors: { name: string; bytes: BytesSpec; error: string }[];
}

const golden = JSON.parse(fs.readFileSync(path.join(__dirname, '../../fixtures/runner-frames.json'), 'utf8')) as Golden;

export function bytesOf(spec: BytesSpec): Buffer {
  const parts = typeof spec === 'string' ? [spec] : spec;
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'hex') : Buffer.from(p.hex.repeat(p.times), 'hex'))));
}

function named<T extends { name: string }>(list: T[], name: string): T {
  const found = list.find((g) => g.name === name);
  if (!found) throw new Error(`no golden frame named "${name}"`);
  return found;
}

/** What the host sends, as the fixture has it. */
export function hostFrame(name: string): Golden['hostToRunner'][number] {
  return named(golden.hostToRunner, name);
}

/** The bytes of one of the runner's golden frames. */
export function runnerFrame(name: string): Buffer {
  return bytesOf(named(golden.runnerToHost, name).bytes);
}

/** The reply a runner's golden frame carries, as parsed. */
export function runnerReply(name: string): unknown {
  return named(golden.runnerToHost, name).reply;
}

export function frameError(name: string): { bytes: Buffer; error: string } {
  const g = named(golden.hostFrameErrors, name);
  return { bytes: bytesOf(g.bytes), error: g.error };
}
