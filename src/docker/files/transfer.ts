import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type Dockerode from 'dockerode';
import { extract } from 'tar-stream';
import type { CollectOutcome, CollectedFile, OutputSink } from '../../core/sandbox';
import type { FilesOutCaps } from '../../core/limits';
import { statusCode } from '../engine';

/** Go's os.FileMode type bits, as Docker reports them in a path stat. */
const MODE = { dir: 2 ** 31, symlink: 2 ** 27, device: 2 ** 26, pipe: 2 ** 25, socket: 2 ** 24, charDevice: 2 ** 21, irregular: 2 ** 19 };
const NOT_REGULAR = MODE.dir | MODE.symlink | MODE.device | MODE.pipe | MODE.socket | MODE.charDevice | MODE.irregular;

interface PathStat {
  name: string;
  size: number;
  mode: number;
  linkTarget: string;
}

async function statPath(container: Dockerode.Container, p: string): Promise<PathStat | undefined> {
  try {
    const res = (await container.infoArchive({ path: p })) as { headers: Record<string, string | undefined>; resume?: () => void };
    res.resume?.();
    const raw = res.headers['x-docker-container-path-stat'];
    if (!raw) throw new Error('the engine sent no path stat');
    return JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as PathStat;
  } catch (e) {
    if (statusCode(e) === 404) return undefined;
    throw e;
  }
}

/**
 * Docker sends a link target only for a symbolic link; Podman sends every entry's resolved path
 * (a file's own path, a link's target), so a target other than the path asked for is a link too.
 */
function isLink(stat: PathStat, asked: string): boolean {
  return ((stat.mode & MODE.symlink) >>> 0) !== 0 || (stat.linkTarget !== '' && stat.linkTarget !== asked);
}

function whatItIs(stat: PathStat, asked: string): string | undefined {
  // Bitwise on a uint32 mode: >>> 0 keeps the top bit (directories) positive.
  const type = (stat.mode & NOT_REGULAR) >>> 0;
  if (isLink(stat, asked)) return 'a symbolic link';
  if (type === 0) return undefined;
  if (type & MODE.dir) return 'a folder';
  return 'not a regular file';
}

/**
 * Collects the named files from a finished call's directory by literal path; nothing in the
 * sandbox is ever listed. A name whose path passes through a symbolic link, or that is itself
 * a link, a folder, a device or anything but a regular file, is refused; so is a file over the
 * caps, whole (never truncated). What passes is streamed to `sink`.
 */
export async function collectFiles(
  container: Dockerode.Container,
  runDir: string,
  names: readonly string[],
  caps: FilesOutCaps,
  sink: OutputSink,
): Promise<CollectOutcome> {
  const outcome: CollectOutcome = { saved: [], missing: [], refused: [] };
  // The engine reads as root and follows a link in any folder of a path but the last: a program
  // that replaced its run folder, or the runs folder, with one would have the image's own files
  // read (its /etc/shadow, a Dev Container's secrets). Nothing of the program's runs now (its
  // processes were stopped first), so what is checked here is what is read below.
  const replaced = await replacedFolder(container, runDir);
  if (replaced) {
    for (const name of names) outcome.refused.push({ name, reason: replaced });
    return outcome;
  }
  let total = 0;
  for (const name of names) {
    if (outcome.saved.length >= caps.maxFiles) {
      outcome.refused.push({ name, reason: `over the limit of ${caps.maxFiles} files per call` });
      continue;
    }
    const segments = name.split('/');
    let problem: string | undefined;
    let missing = false;
    for (let i = 1; i < segments.length && !problem && !missing; i++) {
      const dir = segments.slice(0, i).join('/');
      const stat = await statPath(container, `${runDir}/${dir}`);
      if (!stat) missing = true;
      else if (isLink(stat, `${runDir}/${dir}`)) problem = `its folder ${dir} is a symbolic link`;
      else if (((stat.mode & MODE.dir) >>> 0) === 0) problem = `${dir} is not a folder`;
    }
    const stat = missing || problem ? undefined : await statPath(container, `${runDir}/${name}`);
    if (!problem && !stat) {
      outcome.missing.push(name);
      continue;
    }
    problem ??= whatItIs(stat!, `${runDir}/${name}`);
    if (!problem && stat!.size > caps.maxFileBytes) problem = `${formatSize(stat!.size)}, over the limit of ${formatSize(caps.maxFileBytes)} per file`;
    if (!problem && total + stat!.size > caps.maxTotalBytes) {
      problem = `${formatSize(stat!.size)}, over what is left of the limit of ${formatSize(caps.maxTotalBytes)} per call`;
    }
    if (problem) {
      outcome.refused.push({ name, reason: problem });
      continue;
    }
    const result = await fetchRegularFile(container, `${runDir}/${name}`, name, Math.min(caps.maxFileBytes, caps.maxTotalBytes - total), sink);
    if ('reason' in result) outcome.refused.push({ name, reason: result.reason });
    else {
      total += result.size;
      outcome.saved.push(result);
    }
  }
  return outcome;
}

/**
 * Why the folders a call's files are read from or copied into cannot be trusted: the runs folder
 * or the run's own folder is a link (or no folder at all). Undefined when both are the folders the
 * sandbox made (a run folder the program removed is no reason: its files are simply missing).
 */
export async function replacedFolder(container: Dockerode.Container, runDir: string): Promise<string | undefined> {
  const runs = path.posix.dirname(runDir);
  for (const [folder, what] of [
    [runs, "the sandbox's runs folder"],
    [runDir, 'its run folder'],
  ] as const) {
    const stat = await statPath(container, folder);
    if (!stat) return undefined;
    if (isLink(stat, folder)) return `${what} was replaced by a symbolic link`;
    if (((stat.mode & MODE.dir) >>> 0) === 0) return `${what} was replaced by something that is not a folder`;
  }
  return undefined;
}

/**
 * Why the runs folder cannot take a call's files: the engine writes as root and follows a link
 * there, past the read-only root (the image's own layer). Undefined when it is the folder the
 * sandbox made. Checked when nothing of the chat's runs (a state's holder is stopped between calls).
 */
export async function runsFolderProblem(container: Dockerode.Container, runs: string): Promise<string | undefined> {
  const stat = await statPath(container, runs);
  if (!stat) return 'its runs folder was removed';
  if (isLink(stat, runs)) return 'its runs folder was replaced by a link';
  if (((stat.mode & MODE.dir) >>> 0) === 0) return 'its runs folder was replaced by something that is not a folder';
  return undefined;
}

/** Reads a single-file archive; the tar header is checked again, since it is what is really sent. */
async function fetchRegularFile(
  container: Dockerode.Container,
  fullPath: string,
  name: string,
  maxBytes: number,
  sink: OutputSink,
): Promise<CollectedFile | { reason: string }> {
  const archive = (await container.getArchive({ path: fullPath })) as unknown as Readable;
  const ex = extract();
  let outcome: CollectedFile | { reason: string } | undefined;
  ex.on('entry', (header, body, next) => {
    if (outcome) {
      body.resume();
      body.on('end', next);
      return;
    }
    const size = header.size ?? 0;
    if (header.type !== 'file') {
      outcome = { reason: header.type === 'link' ? 'a hard link' : header.type === 'symlink' ? 'a symbolic link' : 'not a regular file' };
    } else if (header.name !== path.posix.basename(name)) {
      outcome = { reason: 'not the file that was asked for' };
    } else if (size > maxBytes) {
      outcome = { reason: `${formatSize(size)}, over the limit` };
    }
    if (outcome) {
      body.resume();
      body.on('end', next);
      return;
    }
    sink(name, size, body as unknown as NodeJS.ReadableStream).then(
      (saved) => {
        outcome = saved;
        next();
      },
      (e: unknown) => {
        body.resume();
        next(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
  await pipeline(archive, ex);
  return outcome ?? { reason: 'the engine sent no file' };
}

function formatSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}
