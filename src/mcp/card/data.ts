import * as fs from 'node:fs';
import type { CapturedStream } from '../../core/capture';
import type { ExecuteReport } from '../../core/executeCode';
import type { CollectedFile } from '../../core/sandbox';
import type { CardData } from './contract';
import { CARD_STREAM_CHARS } from './names';

/** The file kinds a card shows as more than a chip: images, and tables it can page through. */
const TABLE_NAME = /\.(csv|tsv)$/i;

export function fileKind(f: CollectedFile): CardData['files'][number]['kind'] {
  if (f.mediaType?.startsWith('image/')) return 'image';
  return TABLE_NAME.test(f.name) ? 'table' : 'other';
}

/**
 * What a finished call's card shows, from the call's report. The streams are the whole ones kept
 * beside the run when they were cut for the model (their start and end, CARD_STREAM_CHARS in all),
 * else what the model got; what is left out is counted.
 */
export function cardDataOf(report: ExecuteReport, where: { card: string; chat: string }): CardData {
  const stdout = streamText(report.stdout, report.stdoutFile);
  const stderr = streamText(report.stderr, report.stderrFile);
  return {
    v: 1,
    card: where.card,
    status: statusOf(report),
    exitCode: report.exitCode,
    durationMs: report.durationMs,
    startedAt: report.startedAt.toISOString(),
    image: report.image,
    chat: where.chat,
    stdout: stdout.text,
    stderr: stderr.text,
    stdoutOmitted: stdout.omitted,
    stderrOmitted: stderr.omitted,
    files: report.files.map((f) => ({ name: f.name, size: f.size, ...(f.mediaType ? { mediaType: f.mediaType } : {}), kind: fileKind(f) })),
    notSaved: (report.notSaved ?? []).slice(0, 100).map((n) => ({ name: n.name, reason: n.reason.slice(0, 300) })),
    ...(report.network
      ? {
          network: {
            connections: report.network.connections.map((c) => ({
              host: c.host,
              port: c.port,
              allowed: c.allowed,
              ...(c.reason ? { reason: c.reason } : {}),
              bytesOut: c.bytesOut,
              bytesIn: c.bytesIn,
              ...(c.count ? { count: c.count } : {}),
              ...(c.open ? { open: true } : {}),
            })),
            omitted: (report.network.omitted?.allowed ?? 0) + (report.network.omitted?.blocked ?? 0),
          },
        }
      : {}),
    notes: report.notes.slice(0, 20).map((n) => n.slice(0, 4000)),
  };
}

function statusOf(r: ExecuteReport): CardData['status'] {
  if (r.cancelled) return 'stopped';
  if (r.timedOut) return 'timeout';
  if (r.outputLimited) return 'output';
  if (r.oomKilled) return 'memory';
  return r.exitCode === 0 ? 'ok' : 'failed';
}

/** A stream's start and end for the card, and how many characters are between them. */
function streamText(captured: CapturedStream, whole: string | undefined): { text: string; omitted: number } {
  const half = CARD_STREAM_CHARS / 2;
  if (whole) {
    try {
      const size = fs.statSync(whole).size;
      if (size <= CARD_STREAM_CHARS) return { text: fs.readFileSync(whole, 'utf8'), omitted: 0 };
      const fd = fs.openSync(whole, 'r');
      try {
        const head = Buffer.alloc(half);
        const tail = Buffer.alloc(half);
        fs.readSync(fd, head, 0, half, 0);
        fs.readSync(fd, tail, 0, half, size - half);
        return { text: `${head.toString('utf8')}\n…\n${tail.toString('utf8')}`, omitted: size - CARD_STREAM_CHARS };
      } finally {
        fs.closeSync(fd);
      }
    } catch {
      // The whole stream is gone (the run was deleted): what the model got is shown.
    }
  }
  const head = captured.head.toString('utf8');
  const tail = captured.tail.toString('utf8');
  const omitted = captured.totalBytes - captured.head.length - captured.tail.length;
  return omitted > 0 ? { text: `${head}\n…\n${tail}`, omitted } : { text: head + tail, omitted: 0 };
}
