export interface Stat {
  n: number;
  min: number;
  median: number;
  p95: number;
  max: number;
}

/** Prints `entries` as the bench's tables are printed: a header, one row each, a blank line. */
export function printTable(title: string, entries: [string, Stat][]): void {
  const w = Math.max(title.length, ...entries.map((x) => x[0].length));
  console.log(`${title.padEnd(w)}    n      min   median      p95      max  (ms)`);
  for (const [k, s] of entries) {
    console.log(`${k.padEnd(w)} ${String(s.n).padStart(4)} ${[s.min, s.median, s.p95, s.max].map((v) => v.toFixed(1).padStart(8)).join(' ')}`);
  }
  console.log('');
}

export function stat(ms: number[]): Stat {
  const s = [...ms].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  const p95 = s[Math.min(s.length - 1, Math.ceil(s.length * 0.95) - 1)]!;
  return { n: s.length, min: s[0]!, median, p95, max: s[s.length - 1]! };
}

/** Prints ratios as the bench does: one per line, aligned, then a blank line. */
export function printRatios(ratios: Record<string, number>): void {
  const w = Math.max(...Object.keys(ratios).map((k) => k.length));
  for (const [k, v] of Object.entries(ratios)) console.log(`${k.padEnd(w)}  ${v.toFixed(3)}`);
  console.log('');
}

/** The limits and image a bench part run on its own uses (BENCH_IMAGE, BENCH_N as for the bench). */
export const STANDALONE = {
  image: process.env.BENCH_IMAGE ?? 'codeact-sandbox/python-bench:bookworm',
  n: (fallback: number) => Number(process.env.BENCH_N ?? fallback),
  version: `0.0.0-bench.${process.pid}`,
  limits: { memoryMb: 2048, cpus: 2, pidsLimit: 256, workAreaMb: 1024 },
};

/** Runs one bench part on its own: prints what it measured, exits 0, or prints the failure and exits 1. */
export function runStandalone<T>(measure: Promise<T>, print: (measured: T) => void): void {
  measure.then(
    (m) => {
      print(m);
      process.exit(0);
    },
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
