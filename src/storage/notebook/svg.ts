/**
 * Whether an SVG may be shown inline in a notebook. SVG is XML that can run script and load from
 * elsewhere; the bytes were written by model-written code, and a notebook output renders in a
 * webview. So only a drawing that is plainly inert is shown: an <svg> root, and no script, event
 * handler, foreign content, or reference outside the document (a data: image is inside it).
 * Anything else is named with its size instead; leaving out a harmless file costs little.
 */
const MAX_SVG_CHARS = 5 * 1024 * 1024;

export function svgIsInert(svg: string): boolean {
  if (svg.length > MAX_SVG_CHARS) return false;
  // The root: an optional XML declaration, comments and a doctype without an internal subset
  // (entities could bring in anything), then <svg.
  const prolog = /^\uFEFF?\s*(<\?xml[^>]*\?>\s*)?(<!--[\s\S]*?-->\s*)*(<!DOCTYPE svg[^[>]*>\s*)?(<!--[\s\S]*?-->\s*)*<svg[\s>]/i;
  if (!prolog.test(svg)) return false;
  if (/<!ENTITY|<script|<foreignObject|<iframe|<object|<embed|<!\[CDATA\[/i.test(svg)) return false;
  // Event handlers (onload=...), in any case and with any spacing before the '='.
  if (/[\s"'/]on[a-z]+\s*=/i.test(svg)) return false;
  // References: href / xlink:href / src only to a fragment (#id) or an inline raster image.
  for (const m of svg.matchAll(/(?:href|src)\s*=\s*(["'])(.*?)\1/gis)) {
    const target = m[2]!.trim();
    if (!target.startsWith('#') && !/^data:image\/(png|jpeg|gif);base64,[a-z0-9+/=\s]*$/i.test(target)) return false;
  }
  if (/(?:href|src)\s*=\s*[^"'\s]/i.test(svg)) return false;
  // CSS can load too: url(...) other than a fragment, and @import.
  for (const m of svg.matchAll(/url\(\s*(["']?)(.*?)\1\s*\)/gi)) {
    if (!m[2]!.trim().startsWith('#')) return false;
  }
  if (/@import/i.test(svg)) return false;
  return true;
}
