import picomatch from 'picomatch';

/**
 * Globs for '/'-separated relative paths, compiled by picomatch. The deny list is a security
 * control, so the meaning is pinned here and by tests rather than left to a library's defaults:
 *
 * - `*` any run of characters within one segment, `?` one character within a segment, `**` as a
 *   whole segment any number of segments (zero included); `**` inside a segment is a `*`.
 * - Dotfiles are matched like any other name (`*.pem` matches `.pem`, `**` crosses `.git`).
 * - A trailing `/**` also matches the folder itself (`a/**` matches `a`): a deny rule for a folder
 *   should cover a file that happens to carry the folder's name (a submodule's `.git` file).
 * - Everything else is literal: no brackets, braces, extglobs or negation, so no pattern can
 *   surprise a reader (`[id].tsx` and `{a,b}` are names, not sets).
 * - `\` is a folder separator, as a Windows user writes it. Names never contain one (the name
 *   rules refuse it), so read literally such a rule could never match anything.
 * - A leading `./` is dropped: `./.env` is the workspace's `.env`.
 */
export interface GlobOptions {
  /** Case-insensitive matching, for deny rules on file systems where case does not matter. */
  ignoreCase?: boolean;
}

const PICOMATCH: picomatch.PicomatchOptions = {
  dot: true,
  // Fixed, whatever the platform: names are '/'-separated everywhere.
  windows: false,
  nobrace: true,
  nobracket: true,
  noextglob: true,
  nonegate: true,
};

/**
 * What picomatch is given. Measured with picomatch 4.0.7 (a differential test of ~2 million
 * pattern/name pairs against the previous hand-written matcher): escaped backslashes are
 * collapsed (`a\\\\` matches one backslash) and `\(\\\\` never finishes compiling, hence `\`
 * becomes `/` before anything is escaped; and `a*\/**` does not match `ab` although `a/**`
 * matches `a`, hence the extra pattern without the trailing `/**`.
 */
function picomatchPatterns(glob: string): string[] {
  const segments = glob.replace(/\\/g, '/').split('/');
  const source = segments
    .map((s) => (s === '**' ? s : s.replace(/\*{2,}/g, '*').replace(/[^*?A-Za-z0-9_.-]/g, '\\$&')))
    .join('/');
  const patterns = [source];
  if (source.endsWith('/**') && source.length > 3) patterns.push(source.slice(0, -3));
  return patterns.filter((p) => p !== '');
}

/**
 * One glob as regular expressions. RegExp#test, not picomatch's matcher function: that one also
 * accepts a name equal to the pattern's own text (the name `\$` for the pattern `$`).
 */
function compile(glob: string, options: GlobOptions): RegExp[] {
  // 's': a name with a line break in it is still one name.
  const flags = options.ignoreCase ? 'is' : 's';
  return picomatchPatterns(glob).map((p) => picomatch.makeRe(p, { ...PICOMATCH, flags }));
}

export function matchesGlob(path: string, glob: string, options: GlobOptions = {}): boolean {
  return compile(glob, options).some((re) => re.test(path));
}

/** Compiles a list once for repeated use; returns the first pattern that matches, if any. */
export function globMatcher(globs: readonly string[], options: GlobOptions = {}): (path: string) => string | undefined {
  const compiled = globs.map((g) => ({ glob: g, res: compile(g, options) }));
  return (path) => compiled.find((c) => c.res.some((re) => re.test(path)))?.glob;
}
