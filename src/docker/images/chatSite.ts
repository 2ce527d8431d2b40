/**
 * What of a chat's user site its image keeps: the packages pip installed, and nothing else.
 *
 * The rule: a distribution is a `<name>-<version>.dist-info` folder at the top of the user site
 * with a RECORD file in it (pip writes one for everything it installs: every file it put there,
 * by its path from the site); the image keeps those RECORD files and the regular files they list
 * inside the site. Not kept: files no RECORD lists (what a program wrote into the site, `__pycache__`
 * of later imports), paths leading out of the site (scripts in `~/.local/bin`), folders of
 * their own (each kept file's folders are made for it), links and every other kind, and
 * `*.egg-info` folders (setuptools' legacy install, which pip no longer runs: the wheel it builds
 * installs a dist-info). A program can write a dist-info and a RECORD of its own: then it has
 * made what pip would have made installing a package of its own, and it counts, bytes and all,
 * against the same limits.
 *
 * The archive read here comes from a reader in the sandbox (siteReader.ts), which orders it: each
 * RECORD before the files it lists. Its order is trusted for nothing: a file is kept only when a
 * RECORD read before it lists it.
 */
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { extract, type Header, type Pack } from 'tar-stream';

/** More than this (as counted by diskBytes) in a chat's user site is not kept (the work area's own limit is usually lower). */
export const MAX_CHAT_SITE_BYTES = 2 * 1024 ** 3;
/** A RECORD larger than this is no pip's (the largest wheels list a few MB): its distribution is left out. */
export const MAX_RECORD_BYTES = 16 * 1024 ** 2;
/** All RECORDs together: the paths they list are held in memory while the site is read. */
export const MAX_RECORDS_BYTES = 64 * 1024 ** 2;
/** The block a file system stores files in: a file takes whole blocks, an empty file or a folder one. */
export const DISK_BLOCK = 4096;

/** The user site had more in it than a chat's image keeps. */
export class ChatSiteTooLarge extends Error {
  constructor(
    readonly bytes: number,
    readonly maxBytes: number = MAX_CHAT_SITE_BYTES,
  ) {
    super(`the chat's packages would take more than ${maxBytes} bytes of its image's ${MAX_CHAT_SITE_BYTES}`);
    this.name = 'ChatSiteTooLarge';
  }
}

/**
 * The files read hold more than the work area they were read from can hold: a file is sparse (its
 * size counts bytes never written). Where the reader cannot tell (gVisor reports a file's blocks
 * from its size), this keeps a sparse file from making the image larger than the work area.
 */
export class SparseSite extends Error {
  constructor(readonly bytes: number, readonly workAreaBytes: number) {
    super(`the files read would take ${bytes} bytes, more than the ${workAreaBytes} of the work area they are in: one is sparse`);
    this.name = 'SparseSite';
  }
}

/** "requests-2.32.3.dist-info" → "requests 2.32.3". */
export function distributionOf(dir: string): string | undefined {
  const m = /^([A-Za-z0-9_.]+)-([A-Za-z0-9_.!+]+)\.dist-info$/.exec(dir);
  return m ? `${m[1]} ${m[2]}` : undefined;
}

/** What an entry of `size` bytes takes on a disk: whole blocks, at least one (its inode's share too). */
export function diskBytes(size: number): number {
  return Math.max(1, Math.ceil(size / DISK_BLOCK)) * DISK_BLOCK;
}

/** What a file of `size` bytes, every byte written, takes in a tmpfs: whole pages, none when empty. */
export function pageBytes(size: number): number {
  return Math.ceil(size / DISK_BLOCK) * DISK_BLOCK;
}

/** A path inside the site ("pkg/mod.py"), split, or undefined for one that is empty, absolute, or has an empty, `.` or `..` part. */
export function sitePath(path: string): string[] | undefined {
  const parts = path.split('/');
  return path !== '' && parts.every((p) => p !== '' && p !== '.' && p !== '..') ? parts : undefined;
}

/**
 * The paths a RECORD lists inside the site (its rows' first field, CSV as pip writes it: a field
 * with a comma or a quote is quoted, its quotes doubled). Paths out of the site or not plain are
 * left out.
 */
export function recordPaths(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    let path: string;
    if (line.startsWith('"')) {
      const m = /^"((?:[^"]|"")*)"(?:,|$)/.exec(line);
      if (!m) continue;
      path = m[1]!.replace(/""/g, '"');
    } else {
      path = line.split(',', 1)[0]!;
    }
    if (sitePath(path)) out.push(path);
  }
  return out;
}

/** The distribution folder of a path that is a RECORD at the site's top ("pkg-1.0.dist-info/RECORD"). */
function recordOf(parts: readonly string[]): string | undefined {
  return parts.length === 2 && parts[1] === 'RECORD' && distributionOf(parts[0]!) ? parts[0] : undefined;
}

export interface SiteRead {
  /** "name version" of each distribution kept, sorted. */
  distributions: string[];
  /** What the kept files and folders take, by diskBytes. */
  bytes: number;
}

async function bodyOf(body: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export interface SiteLimits {
  /** What the kept files and folders may take (diskBytes): the chat's limit less what its image holds. */
  maxBytes: number;
  /** The work area the site was read from: its files, every byte written, fit in it (pageBytes). */
  workAreaBytes: number;
}

/**
 * Copies the installed packages of an archive of the user site (entries named `site-packages/...`)
 * into `out` under `site/`, by the rule above: files only, owned by root, 0644 or 0755, each
 * after its folders. Throws ChatSiteTooLarge before copying past `maxBytes`, and SparseSite
 * before copying more than the work area holds.
 */
export async function repackSite(archive: Readable, out: Pack, limits: SiteLimits = { maxBytes: MAX_CHAT_SITE_BYTES, workAreaBytes: MAX_CHAT_SITE_BYTES }): Promise<SiteRead> {
  const { maxBytes, workAreaBytes } = limits;
  const listed = new Set<string>();
  const files = new Set<string>();
  const folders = new Set<string>();
  const found: string[] = [];
  let bytes = 0;
  let dense = 0;
  let records = 0;
  const ex = extract();
  // Its errors reach the caller through the pipeline below; one after it ended (an entry read as
  // the build that consumed `out` stopped) has nobody left to tell.
  ex.on('error', () => {});
  ex.on('entry', (header: Header, body, next) => {
    // Destroyed with the extract when the read fails: the failure is the pipeline's to report.
    body.on('error', () => {});
    const skip = () => {
      body.resume();
      body.on('end', () => next());
    };
    const parts = sitePath(header.name.replace(/\/+$/, '').split('/').slice(1).join('/'));
    const rel = parts?.join('/');
    const size = header.size ?? 0;
    if (!parts || !rel || header.type !== 'file' || files.has(rel) || folders.has(rel)) return skip();
    const record = recordOf(parts);
    if (record === undefined && !listed.has(rel)) return skip();
    if (record !== undefined && (size > MAX_RECORD_BYTES || records + size > MAX_RECORDS_BYTES)) return skip();
    const above = parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('/'));
    // A folder where a file was kept: the two cannot both be in the image.
    if (above.some((f) => files.has(f))) return skip();
    const newFolders = above.filter((f) => !folders.has(f));
    const cost = diskBytes(size) + newFolders.length * DISK_BLOCK;
    if (bytes + cost > maxBytes) {
      next(new ChatSiteTooLarge(bytes + cost, maxBytes));
      return;
    }
    if (dense + pageBytes(size) > workAreaBytes) {
      next(new SparseSite(dense + pageBytes(size), workAreaBytes));
      return;
    }
    bytes += cost;
    dense += pageBytes(size);
    const common = { uid: 0, gid: 0, mtime: header.mtime ?? new Date(0) };
    const write = async () => {
      for (const f of newFolders) {
        folders.add(f);
        out.entry({ ...common, name: `site/${f}`, type: 'directory', mode: 0o755 });
      }
      files.add(rel);
      const h = { ...common, name: `site/${rel}`, type: 'file' as const, mode: (header.mode ?? 0) & 0o111 ? 0o755 : 0o644 };
      if (record !== undefined) {
        const text = await bodyOf(body);
        records += text.length;
        for (const p of recordPaths(text.toString('utf8'))) listed.add(p);
        found.push(distributionOf(record)!);
        out.entry({ ...h, size: text.length }, text);
        return;
      }
      if (size === 0) {
        await bodyOf(body);
        out.entry(h, Buffer.alloc(0));
        return;
      }
      await pipeline(body, out.entry({ ...h, size }));
    };
    // A throw of out.entry: the build ended, and with it the context.
    write().then(
      () => next(),
      (e: unknown) => next(e instanceof Error ? e : new Error(String(e))),
    );
  });
  await pipeline(archive, ex);
  return { distributions: found.sort(), bytes };
}
