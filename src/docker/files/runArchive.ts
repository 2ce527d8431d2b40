import * as path from 'node:path';
import { pack, type Pack } from 'tar-stream';
import { ToolError } from '../../core/errors';
import { quote } from '../../core/files/names';
import { SharedFileChangedError, type StagedFile, type StagedReader } from '../../core/sandbox';
import { PROGRAM_NAME, SANDBOX_GID, SANDBOX_UID } from '../container';
import { ArchiveBody, ChunkRing } from './archiveBody';

const owner = { uid: SANDBOX_UID, gid: SANDBOX_GID, uname: 'nobody', gname: 'nogroup' };

/** 1 MiB reads: 64 KiB ones made sending a large file a third slower than `docker cp`. */
const CHUNK_BYTES = 1024 * 1024;
/** Enough buffers that reading the next chunk overlaps sending the ones before. */
const CHUNKS = 4;

/**
 * The tar stream that lays out one call: its fresh directory, the program, and the shared
 * workspace files under their workspace-relative names. Files are read one after the other as
 * the engine takes them, through a few buffers used again (archiveBody.ts), so a large file is
 * never held in memory.
 */
export function runArchive(runDir: string, code: string, files: readonly StagedFile[]): ArchiveBody {
  const p = pack();
  const mtime = new Date();
  const dirs = new Set<string>();
  for (const f of files) {
    for (let d = path.posix.dirname(f.name); d !== '.'; d = path.posix.dirname(d)) dirs.add(d);
  }
  quiet(p.entry({ ...owner, name: runDir, type: 'directory', mode: 0o700, mtime }));
  // Parents before children: sorting by depth is enough.
  for (const d of [...dirs].sort((a, b) => a.split('/').length - b.split('/').length || a.localeCompare(b))) {
    quiet(p.entry({ ...owner, name: `${runDir}/${d}`, type: 'directory', mode: 0o700, mtime }));
  }
  const program = Buffer.from(code, 'utf8');
  quiet(p.entry({ ...owner, name: `${runDir}/${PROGRAM_NAME}`, type: 'file', mode: 0o600, size: program.length, mtime }, program));

  const largest = files.reduce((most, f) => Math.max(most, f.size), 0);
  const ring = new ChunkRing(Math.max(1, Math.min(CHUNK_BYTES, largest)), CHUNKS);
  void (async () => {
    for (const f of files) await addFile(p, ring, `${runDir}/${f.name}`, f, mtime);
    p.finalize();
  })().catch((e: unknown) => p.destroy(e instanceof Error ? e : new Error(String(e))));
  return new ArchiveBody(p as unknown as AsyncIterable<Buffer>, ring, (why) => p.destroy(why));
}

/**
 * An entry whose errors are its pack's to report: a pack destroyed (a failed or abandoned send)
 * destroys the entry it is writing with the same error, which with no listener would be thrown.
 */
function quiet<T extends { on(event: 'error', listener: () => void): unknown }>(entry: T): T {
  entry.on('error', () => undefined);
  return entry;
}

/** One shared file's entry, its bytes read through the ring; exactly the size checked against the caps, or none. */
async function addFile(p: Pack, ring: ChunkRing, name: string, f: StagedFile, mtime: Date): Promise<void> {
  let reader: StagedReader;
  try {
    reader = await f.open();
  } catch (e) {
    throw toolErrorOf(e, f);
  }
  try {
    let entered: () => void = () => undefined;
    let failed: (e: Error) => void = () => undefined;
    const done = new Promise<void>((resolve, reject) => ((entered = resolve), (failed = reject)));
    // Shared files are read-only for the program: they are the user's data, not scratch space.
    const entry = quiet(p.entry({ ...owner, name, type: 'file', mode: 0o444, size: f.size, mtime }, (e) => (e ? failed(e) : entered())));
    for (let at = 0; at < f.size; ) {
      const buffer = await ring.take();
      const read = await reader.read(buffer.subarray(0, Math.min(buffer.length, f.size - at)), at);
      if (read === 0) {
        ring.give(buffer);
        throw new SharedFileChangedError('resized');
      }
      at += read;
      // The ring bounds what is in flight: a buffer comes back only once its bytes are sent.
      entry.write(buffer.subarray(0, read));
    }
    if ((await reader.read(Buffer.alloc(1), f.size)) > 0) throw new SharedFileChangedError('resized');
    entry.end(null);
    await done;
  } catch (e) {
    throw toolErrorOf(e, f);
  } finally {
    await reader.close();
  }
}

/** What the model is told of a shared file that stopped being the one checked; other errors as they are. */
function toolErrorOf(e: unknown, f: StagedFile): unknown {
  if (!(e instanceof SharedFileChangedError)) return e;
  return e.how === 'replaced'
    ? new ToolError('invalid_input', `${quote(f.name)} was removed or replaced after it was checked, so nothing was shared and the program did not run. Call again to share the file as it is now.`, { cause: e })
    : new ToolError('invalid_input', `${quote(f.name)} changed while it was copied into the sandbox (it had ${f.size} bytes when it was checked), so the program did not run. Call again once the file no longer changes.`, { cause: e });
}
