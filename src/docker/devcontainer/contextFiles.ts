/**
 * Which files of the build context a Dockerfile's COPY and ADD sources read: the part of the
 * context that goes into the configuration hash.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import picomatch from 'picomatch';

/** At most this many files from the build context take part (a COPY . . of a huge workspace). */
export const HASH_MAX_FILES = 20_000;

/** Files of the build context that the sources name: files, folders (recursively) and globs. */
export async function contextInputs(context: string, sources: string[]): Promise<string[]> {
  const out = new Set<string>();
  for (const src of sources) {
    if (out.size >= HASH_MAX_FILES) break;
    const rel = src.replace(/^\/+/, '');
    if (/[*?[]/.test(rel)) {
      const matches = copyGlob(rel.replace(/^\.\//, ''));
      for (const f of await walk(context, HASH_MAX_FILES - out.size)) {
        const r = path.relative(context, f).split(path.sep).join('/');
        // A glob matches a file, or a folder whose files all come along.
        if (r.split('/').some((_, k, parts) => matches(parts.slice(0, k + 1).join('/')))) out.add(f);
      }
      continue;
    }
    const abs = path.resolve(context, rel);
    // Never outside the context: the engine would refuse it anyway.
    if (abs !== context && !abs.startsWith(context + path.sep)) continue;
    for (const f of await walk(abs, HASH_MAX_FILES - out.size)) out.add(f);
  }
  return [...out];
}

/** Files under `p` (or `p` itself when it is a file), skipping symlinked folders; at most `max`. */
export async function walk(p: string, max: number): Promise<string[]> {
  const out: string[] = [];
  const visit = async (current: string): Promise<void> => {
    if (out.length >= max) return;
    let stat: fs.Stats;
    try {
      stat = await fs.promises.lstat(current);
    } catch {
      return;
    }
    if (stat.isFile() || stat.isSymbolicLink()) {
      out.push(current);
      return;
    }
    if (!stat.isDirectory()) return;
    const entries = await fs.promises.readdir(current).catch(() => [] as string[]);
    for (const e of entries.sort()) await visit(path.join(current, e));
  };
  await visit(p);
  return out;
}

/**
 * A COPY source's wildcards, as the builder reads them (Go's filepath.Match): `*`, `?`, `[a-z]`
 * and `[^a]`, each within one path segment; braces, extglobs, a leading `!` and parentheses are
 * plain characters. Two readings are wider than Go's, which for a hash costs at most a needless
 * rebuild: `[!a]` negates as in the shell, and `**` spans folders as COPY --parents reads it.
 */
function copyGlob(source: string): (relativePath: string) => boolean {
  // picomatch turns parentheses into regex groups even without extglobs, so "report (1)*.txt"
  // would not match its own name; escaped, they are the literal characters Go sees.
  const glob = source.replace(/[()]/g, '\\$&');
  return picomatch(glob, { dot: true, nobrace: true, noextglob: true, nonegate: true, posix: true, windows: false });
}
