// Shared by the artifact store's unit tests: a fixed clock, a valid outcome, and views of the disk.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ArtifactStore, RunRecord, type RunOutcome, type StoreFs } from '../../src/storage/artifactStore';

export const T0 = Date.UTC(2025, 0, 2, 3, 4, 5, 678);
export const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]);
export const HOUR = 60 * 60 * 1000;

export function outcome(over: Partial<RunOutcome> = {}): RunOutcome {
  return {
    startedAt: '2025-01-02T03:04:05.678Z',
    durationMs: 1234,
    image: 'python:3.12-slim',
    exitCode: 0,
    timedOut: false,
    cancelled: false,
    program: 'print(1)',
    resultText: '1',
    filesIn: ['data/a.csv'],
    stdoutTruncated: false,
    stderrTruncated: false,
    ...over,
  };
}

/** Every entry below `dir`, sorted, folders with a trailing slash. */
export function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        out.push(`${r}/`);
        walk(path.join(d, e.name), r);
      } else out.push(r);
    }
  };
  walk(dir, '');
  return out;
}

export function dirBytes(dir: string): number {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? dirBytes(p) : fs.lstatSync(p).size;
  }
  return total;
}

/** The real file operations, counted by name. */
export function countingFs(): { fs: StoreFs; calls: Record<string, number>; reset(): void } {
  const calls: Record<string, number> = {};
  const count = (name: string) => {
    calls[name] = (calls[name] ?? 0) + 1;
  };
  const real = fs.promises;
  const counted: StoreFs = {
    readdir: (dir, options) => (count('readdir'), real.readdir(dir, options)),
    lstat: (file) => (count('lstat'), real.lstat(file)),
    readFile: (file, encoding) => (count('readFile'), real.readFile(file, encoding)),
    rm: (target, options) => (count('rm'), real.rm(target, options)),
    rmdir: (dir) => (count('rmdir'), real.rmdir(dir)),
  };
  return {
    fs: counted,
    calls,
    reset: () => {
      for (const key of Object.keys(calls)) delete calls[key];
    },
  };
}

/**
 * `count` finished runs of `session` written straight to disk (as earlier windows left them),
 * one millisecond apart from `start`, each with a `size`-byte file. Returns their run ids.
 */
export function writeRuns(root: string, session: string, count: number, start: number, size: number): string[] {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const runId = `${new Date(start + i).toISOString().replace(/[-:.]/g, '')}-${i.toString(16).padStart(6, '0').slice(-6)}`;
    const dir = path.join(root, session, runId);
    fs.mkdirSync(path.join(dir, 'files'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'files', 'out.bin'), Buffer.alloc(size, 1));
    const record = RunRecord.parse({
      ...outcome(),
      version: 1,
      runId,
      sessionKeyDigest: session,
      sessionLabel: `label ${session}`,
      files: [{ name: 'out.bin', size }],
    });
    fs.writeFileSync(path.join(dir, 'run.json'), `${JSON.stringify(record, null, 2)}\n`);
    ids.push(runId);
  }
  return ids;
}

/** A test's store: its temporary folder, the store's root in it, and the time the store reads. */
export interface StoreUnderTest {
  tmp: string;
  root: string;
  /** The store's clock: starts at T0; a test moves it. */
  now: number;
  store: ArtifactStore;
}

/** A fresh store in a temporary folder for each test of the calling suite, removed after it. */
export function useStore(prefix: string): StoreUnderTest {
  const s = { now: T0 } as StoreUnderTest;
  beforeEach(() => {
    s.tmp = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    s.root = path.join(s.tmp, 'store');
    s.now = T0;
    s.store = new ArtifactStore(s.root, { now: () => s.now });
  });
  afterEach(() => fs.rmSync(s.tmp, { recursive: true, force: true }));
  return s;
}

/** A finished run with one file of `size` bytes, at the store's current time. */
export async function finishedRunIn(store: ArtifactStore, session: string, size: number, label = `label ${session}`) {
  const w = store.beginRun(session, label);
  await w.addFile('out.bin', Buffer.alloc(size, 1), size);
  w.finish(outcome());
  return w;
}

/**
 * A finished session-mode run of `chat` with one `size`-byte file (none for 0), as the pipeline
 * records it: its state went from `from` to `now` (kept unless they are equal), sealed by the store.
 */
export async function sessionRunIn(store: ArtifactStore, chat: string, size: number, from: string, now: string, over: Partial<RunOutcome> = {}) {
  const w = store.beginRun(chat, `label ${chat}`);
  if (size > 0) await w.addFile('out.bin', Buffer.alloc(size, 1), size);
  w.finish(outcome({ program: `# ${chat} ${now}`, filesIn: [], state: { reset: false, kept: from !== now, from, now }, ...over }));
  return w;
}
