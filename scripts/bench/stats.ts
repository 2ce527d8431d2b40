export interface Stat {
  n: number;
  min: number;
  median: number;
  p95: number;
  max: number;
}

export function stat(ms: number[]): Stat {
  const s = [...ms].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  const p95 = s[Math.min(s.length - 1, Math.ceil(s.length * 0.95) - 1)]!;
  return { n: s.length, min: s[0]!, median, p95, max: s[s.length - 1]! };
}
