/**
 * The host decides what a produced file is, from its first bytes. A program's own claim (a
 * file extension, a manifest field) is never trusted: a media type chooses how a viewer renders
 * the bytes, and the bytes were written by model-written code.
 */
export type ImageMediaType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

/** Bytes of a file's start that `sniffImageType` needs. */
export const SNIFF_BYTES = 12;

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const JPEG = Buffer.from([0xff, 0xd8, 0xff]);
const GIF87 = Buffer.from('GIF87a', 'latin1');
const GIF89 = Buffer.from('GIF89a', 'latin1');
const RIFF = Buffer.from('RIFF', 'latin1');
const WEBP = Buffer.from('WEBP', 'latin1');

/**
 * A raster image type by magic number only, or undefined. SVG is deliberately not an image
 * here: it is XML that can carry script and external references, so it is treated as text.
 */
export function sniffImageType(head: Buffer): ImageMediaType | undefined {
  const at = (sig: Buffer, offset = 0) => head.length >= offset + sig.length && head.subarray(offset, offset + sig.length).equals(sig);
  if (at(PNG)) return 'image/png';
  if (at(JPEG)) return 'image/jpeg';
  if (at(GIF87) || at(GIF89)) return 'image/gif';
  if (at(RIFF) && at(WEBP, 8)) return 'image/webp';
  return undefined;
}
