/**
 * What a model writes for a workspace file, as the listing names it. Models often give the path
 * they saw in the editor (`/home/me/project/data/sales.csv`, `C:\Users\me\project\data\sales.csv`)
 * or Windows separators (`data\sales.csv`). A name inside a workspace folder is mapped to its
 * workspace name before any check; everything else is left as it came, and the checks that
 * follow (names.ts) judge it as before: the rules stay the same, and a path outside the
 * workspace is still refused without being echoed. Pure: no file system is asked.
 */

/** A workspace folder as names are mapped into it. */
export interface WorkspaceRoot {
  /** The folder's absolute path on the machine that lists it (POSIX or Windows form). */
  path: string;
  /** What its files' names start with: '' with one folder, `name/` with several. */
  prefix: string;
}

const WINDOWS_ABSOLUTE = /^[A-Za-z]:[\\/]/;

/** `raw` as a workspace name when it is a path inside one of `roots` or uses Windows separators; else `raw`. */
export function toWorkspaceName(raw: string, roots: readonly WorkspaceRoot[]): string {
  if (typeof raw !== 'string') return raw;
  const windows = WINDOWS_ABSOLUTE.test(raw);
  const slashed = raw.includes('\\') ? raw.replace(/\\/g, '/') : raw;
  const absolute = windows || slashed.startsWith('/');
  if (!absolute) return slashed;
  for (const root of roots) {
    const base = root.path.replace(/\\/g, '/').replace(/\/+$/, '');
    if (base === '') continue;
    // Drive letters and Windows paths compare without case, as Windows does.
    const caseless = windows || WINDOWS_ABSOLUTE.test(root.path);
    const head = slashed.slice(0, base.length + 1);
    const same = caseless ? head.toLowerCase() === `${base}/`.toLowerCase() : head === `${base}/`;
    if (same && slashed.length > base.length + 1) return `${root.prefix}${slashed.slice(base.length + 1)}`;
  }
  return raw;
}
