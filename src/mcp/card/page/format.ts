/** How the card words numbers and a run's end. Plain functions, no DOM. */
import type { CardData } from '../contract';

const GROUPED = new Intl.NumberFormat('en-US');

export function count(n: number): string {
  return GROUPED.format(n);
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${count(n)} ${n === 1 ? one : many}`;
}

/** 0.4 s, 2.3 s, 1 min 5 s, 1 h 2 min: tenths while a run is short, as a clock that never runs ahead. */
export function duration(ms: number): string {
  const safe = Number.isFinite(ms) && ms > 0 ? ms : 0;
  const tenths = Math.floor(safe / 100);
  if (tenths < 600) return `${(tenths / 10).toFixed(1)} s`;
  const seconds = Math.floor(safe / 1000);
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export function bytes(n: number): string {
  if (n < 1024) return `${count(n)} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/** Lines of a program as a person counts them (a last newline ends a line, it starts none). */
export function lineCount(code: string): number {
  if (code === '') return 0;
  return code.replace(/\r\n?/g, '\n').replace(/\n$/, '').split('\n').length;
}

export function runningLine(code: unknown): string {
  if (typeof code !== 'string' || code.trim() === '') return 'Running Python…';
  return `Running ${plural(lineCount(code), 'line')} of Python…`;
}

/** The head of a finished card: how the run ended and how long it took. */
export function statusLine(data: Pick<CardData, 'status' | 'exitCode' | 'durationMs'>): string {
  const time = duration(data.durationMs);
  const exit = data.exitCode !== null && data.exitCode !== 0 ? ` · exit code ${data.exitCode}` : '';
  switch (data.status) {
    case 'ok':
      return `Finished in ${time}${exit}`;
    case 'failed':
      return `Failed after ${time}${exit}`;
    case 'timeout':
      return `Stopped at the time limit after ${time}`;
    case 'stopped':
      return `Stopped after ${time}`;
    case 'memory':
      return `Out of memory after ${time}`;
    case 'output':
      return `Stopped at the output limit after ${time}`;
    default:
      return `Ended after ${time}${exit}`;
  }
}

/** "1,234 characters left out", or nothing when nothing was. */
export function leftOut(n: number, what = 'characters'): string {
  return n > 0 ? `${count(n)} ${n === 1 ? what.replace(/s$/, '') : what} left out` : '';
}
