/**
 * A saved image shown in the card: its bytes fetched with card_file and shown from a data: URL
 * (the frame's only source of images; it loads nothing from anywhere). Only the image types
 * below, by the media type the server read; an SVG is shown by <img>, where its scripts never run
 * and it fetches nothing.
 */
import type { CardData } from '../contract';
import { CARD_FILE_BYTES } from '../names';
import { reason, text } from './data';
import { el } from './dom';
import { bytes } from './format';
import type { CallTool } from './tools';

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/svg+xml']);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The data: URL of an image's bytes, or undefined when they are not one of the image types. */
export function imageUrl(mediaType: string, base64: string): string | undefined {
  const type = mediaType.split(';')[0]!.trim().toLowerCase();
  if (!IMAGE_TYPES.has(type) || base64.length % 4 !== 0 || !BASE64.test(base64)) return undefined;
  return `data:${type};base64,${base64}`;
}

/** An <img> of the bytes, or undefined when they are not an image the card shows. */
export function imageOf(mediaType: string, base64: string, alt: string): HTMLImageElement | undefined {
  const url = imageUrl(mediaType, base64);
  if (url === undefined) return undefined;
  const img = el('img', { alt, decoding: 'async' });
  // The only place the card sets a source: a data: URL built above from checked bytes.
  img.src = url;
  return img;
}

export function imageFigure(file: CardData['files'][number], card: string, callTool: CallTool): HTMLElement {
  const caption = el('figcaption', {}, file.name);
  const figure = el('figure', { class: 'image' });
  if (file.size > CARD_FILE_BYTES) {
    figure.append(el('p', { class: 'muted' }, `Too large to show here (${bytes(file.size)}): open it from its chip below.`), caption);
    return figure;
  }
  const status = el('p', { class: 'muted', role: 'status' }, 'Loading…');
  figure.append(status, caption);
  callTool('file', { card, name: file.name }).then(
    (result) => {
      const img = imageOf(text(result.mediaType), text(result.base64), file.name);
      if (!img) {
        status.textContent = `Not shown: ${text(result.mediaType) || 'no media type'} is not an image type the card shows.`;
        return;
      }
      img.addEventListener('load', () => status.remove(), { once: true });
      img.addEventListener('error', () => (status.textContent = 'The image could not be decoded.'), { once: true });
      figure.insertBefore(img, status);
    },
    (error: unknown) => {
      status.textContent = `Not shown: ${reason(error)}`;
    },
  );
  return figure;
}
