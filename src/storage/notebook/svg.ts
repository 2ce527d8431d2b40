/**
 * SVG in an exported notebook. An SVG's bytes were written by model-written code, and SVG is a
 * document that can run script and load from elsewhere, in a webview that renders notebook
 * outputs. So it is never emitted as `image/svg+xml` (which renderers put into the page as
 * markup): it is shown as an <img> whose source is the SVG as a data: URI, and a browser loads an
 * image of that kind with scripts off and no outside requests. What is checked here is only that
 * the bytes are an SVG document, by a linear scan (no backtracking on hostile input).
 */
const MAX_SVG_BYTES = 5 * 1024 * 1024;

/** Whether `bytes` hold an SVG document: an optional BOM, XML declaration, comments and doctype, then an <svg root. */
export function isSvg(bytes: Buffer): boolean {
  if (bytes.length > MAX_SVG_BYTES) return false;
  const text = bytes.toString('utf8');
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  for (;;) {
    while (i < text.length && /\s/.test(text[i]!)) i++;
    if (text.startsWith('<?xml', i) || text.startsWith('<!--', i) || text.startsWith('<!DOCTYPE', i) || text.startsWith('<!doctype', i)) {
      const close = text.startsWith('<!--', i) ? text.indexOf('-->', i + 4) : text.indexOf('>', i);
      if (close < 0) return false;
      i = close + (text.startsWith('<!--', i) ? 3 : 1);
      continue;
    }
    return /^<svg[\s>/]/i.test(text.slice(i, i + 5));
  }
}

/** The notebook output data that shows an SVG as an inert image. */
export function svgImageHtml(bytes: Buffer, alt: string): string {
  const escaped = alt.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<img src="data:image/svg+xml;base64,${bytes.toString('base64')}" alt="${escaped}"/>`;
}
