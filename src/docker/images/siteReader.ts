/**
 * Reads a chat's installed packages out of its sandbox: a program of ours, run in the sandbox as
 * the sandbox's user (docker exec), writes them as a tar to its stdout.
 *
 * Not the engine's archive API: the engine reads a container's files as root and follows links in
 * every folder of a path but the last, so a folder of the user site's path swapped for a link
 * between a check and the read (by a process of the chat, at the moment of its choosing) would
 * have files the chat cannot read (root's, in its image) copied into the chat's image, readable.
 * The reader has exactly a program's rights: whatever is swapped under it, it reads nothing a
 * program could not read itself. It also never follows a link: each folder is opened from the
 * one above it with O_NOFOLLOW, from the work area's mount down.
 *
 * It keeps to the rule of chatSite.ts (each distribution's RECORD, then the files it lists) and
 * leaves out sparse files (fewer bytes on the disk than their size says: pip writes every byte
 * of what it installs, and a sparse file would be stored whole in the image). gVisor reports a
 * file's blocks from its size, so there a sparse file is read whole; the host then refuses a
 * read of more than the work area holds (SparseSite). What the reader writes is the chat's to
 * shape (a process of the chat may stop or race it): the host keeps to the rule and counts every
 * byte itself (repackSite), so a reader led astray costs the chat its image, nothing more.
 */
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type Dockerode from 'dockerode';
import { ExecStdout, WORK_ROOT, startGuest } from '../container';
import { ENGINE_DEADLINE_MS } from '../engine';
import { MAX_RECORD_BYTES } from './chatSite';

/** A folder of the user site's path is a link: it is not read. */
export class LinkedSite extends Error {
  constructor(readonly at: string) {
    super(`${at} is a symbolic link in the sandbox; the user site behind it is not read`);
    this.name = 'LinkedSite';
  }
}

/** The reader ended without reading the user site to its end (it is gone, or the reader was stopped). */
export class SiteNotRead extends Error {
  constructor(readonly said: string) {
    super(`the user site was not read${said ? `: ${said}` : ''}`);
    this.name = 'SiteNotRead';
  }
}

/** A reader that writes nothing for this long, while its output is not held back by us, is given up. */
export const READ_IDLE_MS = ENGINE_DEADLINE_MS;

/** The reader's source for the user site at `site` (a path userSitePackages made: no quote or backslash). */
export function siteReaderSource(site: string): string {
  return [
    'import csv, io, os, re, stat, sys, tarfile',
    `SITE = ${JSON.stringify(site)}`,
    `TOP = ${JSON.stringify(WORK_ROOT)}`,
    `RECORD_MAX = ${MAX_RECORD_BYTES}`,
    'NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC',
    "DIST = re.compile(r'[A-Za-z0-9_.]+-[A-Za-z0-9_.!+]+\\.dist-info')",
    '',
    'def end(word):',
    "    sys.stderr.write(word + '\\n')",
    '    sys.stderr.flush()',
    '    os._exit(0)',
    '',
    'def folder(name, at):',
    '    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW, dir_fd=at)',
    '',
    // The work area is a mount: it cannot be swapped. Each folder below it is opened from it.
    'site = os.open(TOP, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)',
    'path = TOP',
    "for part in SITE[len(TOP) + 1:].split('/'):",
    "    path += '/' + part",
    '    try:',
    '        inner = folder(part, site)',
    '    except OSError:',
    // A link opened so fails with ELOOP or ENOTDIR (O_DIRECTORY); its own stat says which it is.
    '        try:',
    '            linked = stat.S_ISLNK(os.stat(part, dir_fd=site, follow_symlinks=False).st_mode)',
    '        except OSError:',
    '            linked = False',
    "        end('linked ' + path if linked else 'missing')",
    '    os.close(site)',
    '    site = inner',
    '',
    'def regular(parts):',
    '    at, opened = site, []',
    '    try:',
    '        for part in parts[:-1]:',
    '            at = folder(part, at)',
    '            opened.append(at)',
    '        fd = os.open(parts[-1], os.O_RDONLY | os.O_NONBLOCK | NOFOLLOW, dir_fd=at)',
    '    except OSError:',
    '        return None',
    '    finally:',
    '        for d in opened:',
    '            os.close(d)',
    '    st = os.fstat(fd)',
    '    if not stat.S_ISREG(st.st_mode) or st.st_blocks * 512 < st.st_size:',
    '        os.close(fd)',
    '        return None',
    '    return fd, st',
    '',
    'def take(fd, n):',
    "    out = b''",
    '    while len(out) < n:',
    '        chunk = os.read(fd, min(n - len(out), 1 << 20))',
    '        if not chunk:',
    '            break',
    '        out += chunk',
    '    return out',
    '',
    'class Exact:',
    '    def __init__(self, fd, size):',
    '        self.fd, self.left = fd, size',
    '    def read(self, n=-1):',
    '        n = self.left if n is None or n < 0 else min(n, self.left)',
    '        out = take(self.fd, n)',
    // A file cut shorter since its size was read: the rest is zeros, as many as the header said.
    '        out += bytes(n - len(out))',
    '        self.left -= n',
    '        return out',
    '',
    "tar = tarfile.open(fileobj=sys.stdout.buffer, mode='w|', format=tarfile.PAX_FORMAT)",
    '',
    'def put(rel, st, body, size):',
    "    info = tarfile.TarInfo('site-packages/' + rel)",
    '    info.size = size',
    '    info.mode = 0o755 if st.st_mode & 0o111 else 0o644',
    // Kept: a .pyc pip compiled names its source's time, and is used only while it matches.
    '    info.mtime = int(st.st_mtime)',
    '    tar.addfile(info, body)',
    '',
    'sent = set()',
    'for name in sorted(os.listdir(site)):',
    '    if not DIST.fullmatch(name):',
    '        continue',
    "    got = regular([name, 'RECORD'])",
    '    if got is None:',
    '        continue',
    '    fd, st = got',
    '    data = take(fd, RECORD_MAX + 1)',
    '    os.close(fd)',
    '    if len(data) > RECORD_MAX:',
    '        continue',
    "    put(name + '/RECORD', st, io.BytesIO(data), len(data))",
    "    sent.add(name + '/RECORD')",
    '    try:',
    "        listed = sorted({row[0] for row in csv.reader(io.StringIO(data.decode('utf-8'))) if row})",
    '    except (UnicodeDecodeError, csv.Error):',
    '        continue',
    '    for rel in listed:',
    "        parts = rel.split('/')",
    "        if rel in sent or any(p in ('', '.', '..') for p in parts):",
    '            continue',
    '        got = regular(parts)',
    '        if got is None:',
    '            continue',
    '        fd, st = got',
    '        try:',
    '            put(rel, st, Exact(fd, st.st_size), st.st_size)',
    '        finally:',
    '            os.close(fd)',
    '        sent.add(rel)',
    'tar.close()',
    'sys.stdout.buffer.flush()',
    "end('ok')",
    '',
  ].join('\n');
}

export interface SiteReading {
  /** The tar the reader writes (entries named `site-packages/...`). */
  archive: Readable;
  /** Resolves once the reader has read the site to its end; rejects with LinkedSite or SiteNotRead. */
  ended: Promise<void>;
}

/** Starts the reader in the sandbox. The caller reads `archive` to its end (it is held back until read). */
export async function readSite(container: Dockerode.Container, site: string, signal: AbortSignal): Promise<SiteReading> {
  const output = (await startGuest(container, siteReaderSource(site), ENGINE_DEADLINE_MS)) as Readable;
  const archive = new ExecStdout();
  // A reader a process of the chat stopped (SIGSTOP, same user) would hold the chat's captures,
  // and a deletion of the chat waiting for them, forever: one silent for READ_IDLE_MS is given up.
  // Not while its output waits for the build to read it: then the build is the slow one.
  let seen = -1;
  let quietSince = Date.now();
  const watch = setInterval(() => {
    const now = Date.now();
    if (archive.received !== seen || archive.readableLength > 0 || archive.writableLength > 0) {
      seen = archive.received;
      quietSince = now;
    } else if (now - quietSince >= READ_IDLE_MS) {
      output.destroy(new SiteNotRead(`it wrote nothing for ${READ_IDLE_MS / 1000} s`));
    }
  }, READ_IDLE_MS / 6);
  const ended = pipeline(output, archive, { signal })
    .then(() => {
      const last = archive.stderr.trim().split('\n').at(-1) ?? '';
      if (last === 'ok') return;
      if (last.startsWith('linked ')) throw new LinkedSite(last.slice('linked '.length));
      throw new SiteNotRead(last === 'missing' ? 'it is gone' : last.slice(-300));
    })
    .finally(() => clearInterval(watch));
  return { archive, ended };
}
