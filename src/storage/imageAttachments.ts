import * as fs from 'node:fs';
import * as path from 'node:path';
import { describeError } from '../core/errors';
import type { Logger } from '../core/logger';
import type { CollectedFile } from '../core/sandbox';

export interface ImageAttachment {
  name: string;
  mimeType: string;
  bytes: Buffer;
}

/**
 * The images a run produced, read back from its files folder for a multimodal model to look at.
 * The type was decided by the host from the bytes (magic numbers) when the file was stored; the
 * program's word is not taken. Images over `maxBytes` are left out; one that cannot be read is
 * logged and left out.
 */
export function readImageAttachments(filesDir: string, files: readonly CollectedFile[], maxBytes: number, log: Logger): ImageAttachment[] {
  const images: ImageAttachment[] = [];
  for (const f of files) {
    if (!f.mediaType?.startsWith('image/') || f.size > maxBytes) continue;
    try {
      images.push({ name: f.name, mimeType: f.mediaType, bytes: fs.readFileSync(path.join(filesDir, ...f.name.split('/'))) });
    } catch (e) {
      log.warn(`could not attach ${f.name}: ${describeError(e)}`);
    }
  }
  return images;
}
