import * as fs from 'node:fs';
import * as path from 'node:path';

/** At most this many files from the build context take part (a COPY . . of a huge workspace). */
export const HASH_MAX_FILES = 20_000;

/** Files of the build context that the sources name: files, folders (recursively) and globs. */
export async function contextInputs(context: string, sources: string[]): Promise<string[]> {
  const out = new Set<string>();
  for (const src of sources) {
    if (out.size >= HASH_MAX_FILES) break;
    const rel = src.replace(/^\/+/, '');
    if (/[*?[]/.test(rel)) {
      const re = globRegExp(rel.replace(/^\.\//, ''));
      for (const f of await walk(context, HASH_MAX_FILES - out.size)) {
        const r = path.relative(context, f).split(path.sep).join('/');
        // A glob matches a file, or a folder whose files all come along.
        if (r.split('/').some((_, k, parts) => re.test(parts.slice(0, k + 1).join('/')))) out.add(f);
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

function globRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i);
      if (end < 0) re += '\\[';
      else {
        re += `[${glob.slice(i + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}
