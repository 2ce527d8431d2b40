/**
 * The run card's page as it ships: one self-contained HTML string, built by esbuild.mjs from this
 * folder. The server imports only this file from here (the rest is the page's own code, bundled
 * for the browser). Bundles carry the page inline (esbuild defines it); run from the sources (tsx,
 * tests), it is the build's dist/card.html, so tests show exactly what ships.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

declare const __CODEACT_CARD_HTML__: string | undefined;

let cached: string | undefined;

export function cardHtml(): string {
  if (typeof __CODEACT_CARD_HTML__ === 'string') return __CODEACT_CARD_HTML__;
  if (cached === undefined) {
    const at = path.resolve(__dirname, '../../../../dist/card.html');
    if (!fs.existsSync(at)) {
      throw new Error(`the run card has not been built (${at} is missing): run \`npm run build\` first, which makes it from src/mcp/card/page/`);
    }
    cached = fs.readFileSync(at, 'utf8');
  }
  return cached;
}
