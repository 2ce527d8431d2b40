/**
 * Suggestions for a file name the model got slightly wrong. A model that is told "not found"
 * with nothing else tends to guess again; a short list of real names lets it correct itself in
 * one step.
 */

/** Most suggestions listed in one message: enough to correct a typo, too few to enumerate a workspace. */
export const MAX_NEAR_MISSES = 5;
const MAX_BASE_DISTANCE = 2;
const MAX_PATH_DISTANCE = 3;

/**
 * Optimal-string-alignment distance (Levenshtein plus adjacent transposition), or `max + 1` as
 * soon as the answer is known to exceed `max`. The early exit matters: this runs against every
 * name of a workspace listing, which may hold tens of thousands of paths.
 */
export function boundedDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prevPrev: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prevPrev[j - 2]! + 1);
      row.push(d);
      rowMin = Math.min(rowMin, d);
    }
    if (rowMin > max) return max + 1;
    prevPrev = prev;
    prev = row;
  }
  return Math.min(prev[b.length]!, max + 1);
}

export function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/**
 * Up to `limit` names from `candidates` close to `wanted`, closest first. Closeness, in order:
 * the same path in another case; the same base name in another folder (or case), nearer paths
 * first; then a base name within 2 edits or a path within 3 edits, fewest edits first, the
 * nearer path breaking ties. Distances ignore case so a case slip costs nothing on top of a
 * typo. Remaining ties are broken alphabetically so messages are stable.
 */
export function nearMisses(wanted: string, candidates: Iterable<string>, limit = MAX_NEAR_MISSES): string[] {
  const w = wanted.toLowerCase();
  const wBase = baseName(w);
  const scored: { name: string; tier: number; distance: number; pathDistance: number }[] = [];
  for (const name of candidates) {
    if (name === wanted) continue;
    const n = name.toLowerCase();
    if (n === w) {
      scored.push({ name, tier: 0, distance: 0, pathDistance: 0 });
      continue;
    }
    const nBase = baseName(n);
    const pathDistance = boundedDistance(w, n, MAX_PATH_DISTANCE);
    if (nBase === wBase) {
      scored.push({ name, tier: 1, distance: pathDistance, pathDistance });
      continue;
    }
    const baseDistance = boundedDistance(wBase, nBase, MAX_BASE_DISTANCE);
    if (baseDistance <= MAX_BASE_DISTANCE || pathDistance <= MAX_PATH_DISTANCE) {
      scored.push({ name, tier: 2, distance: Math.min(baseDistance, pathDistance), pathDistance });
    }
  }
  scored.sort(
    (x, y) => x.tier - y.tier || x.distance - y.distance || x.pathDistance - y.pathDistance || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0),
  );
  return scored.slice(0, limit).map((s) => s.name);
}
