/**
 * A deliberately tiny glob matcher for '/'-separated relative paths. Node's `path.matchesGlob`
 * is still experimental in Node 20 and its semantics may shift under us; the deny list is a
 * security control, so its meaning is pinned here and by tests instead.
 *
 * Syntax: `*` any run of characters within one segment, `?` one character within a segment,
 * `**` as a whole segment any number of segments (zero included). Everything else is literal;
 * there are no brackets, braces or negation, so no pattern can surprise a reader.
 * A trailing `/**` also matches the folder itself (`a/**` matches `a`): a deny rule for a folder
 * should cover a file that happens to carry the folder's name (a submodule's `.git` file).
 */
export interface GlobOptions {
  /** Case-insensitive matching, for deny rules on file systems where case does not matter. */
  ignoreCase?: boolean;
}

export function globToRegExp(glob: string, options: GlobOptions = {}): RegExp {
  // `**/**` means the same as `**`; collapsing keeps the separator logic below simple.
  const segments = glob.split('/').filter((s, i, all) => !(s === '**' && all[i - 1] === '**'));
  let source = '';
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1;
    if (segment === '**') {
      if (i === 0) source += last ? '.*' : '(?:.*/)?';
      else source += '(?:/.*)?';
      return;
    }
    // A leading `**` already consumed its separator.
    if (i > 0 && !(i === 1 && segments[0] === '**')) source += '/';
    source += segmentSource(segment);
  });
  return new RegExp(`^${source}$`, options.ignoreCase ? 'is' : 's');
}

function segmentSource(segment: string): string {
  let out = '';
  for (const ch of segment) {
    if (ch === '*') out += '[^/]*';
    else if (ch === '?') out += '[^/]';
    else out += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return out;
}

export function matchesGlob(path: string, glob: string, options: GlobOptions = {}): boolean {
  return globToRegExp(glob, options).test(path);
}

/** Compiles a list once for repeated use; returns the first pattern that matches, if any. */
export function globMatcher(globs: readonly string[], options: GlobOptions = {}): (path: string) => string | undefined {
  const compiled = globs.map((g) => ({ glob: g, re: globToRegExp(g, options) }));
  return (path) => compiled.find((c) => c.re.test(path))?.glob;
}
