import * as fs from 'node:fs';

/** package.nls.json: the manifest's words for people, by key. */
export const manifestStrings: Record<string, string> = JSON.parse(fs.readFileSync('package.nls.json', 'utf8'));

/** Every "%key%" the manifest names, in order of appearance. */
export function manifestKeys(value: unknown = JSON.parse(fs.readFileSync('package.json', 'utf8'))): string[] {
  if (typeof value === 'string') return /^%[^%\s]+%$/.test(value) ? [value.slice(1, -1)] : [];
  if (Array.isArray(value)) return value.flatMap((v) => manifestKeys(v));
  if (value && typeof value === 'object') return Object.values(value).flatMap((v) => manifestKeys(v));
  return [];
}

function localize(value: unknown): unknown {
  if (typeof value === 'string' && /^%[^%\s]+%$/.test(value)) return manifestStrings[value.slice(1, -1)] ?? value;
  if (Array.isArray(value)) return value.map(localize);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, localize(v)]));
  return value;
}

/** package.json as VS Code shows it in English: each "%key%" replaced by its words. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const manifest: any = localize(JSON.parse(fs.readFileSync('package.json', 'utf8')));
