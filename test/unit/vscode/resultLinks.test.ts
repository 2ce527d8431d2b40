import * as assert from 'node:assert/strict';
import { fileLinks } from '../../../src/vscode/resultLinks';
import { createRequire } from 'node:module';

interface Token {
  type: string;
  attrs: [string, string][] | null;
  children: Token[] | null;
}
const MarkdownIt = createRequire(__filename)('markdown-it') as new (options: object) => { parse(src: string, env: object): Token[]; validateLink(url: string): boolean };
const md = new MarkdownIt({ html: true, linkify: true });
// VS Code's chat opens file: links; markdown-it refuses the scheme unless told otherwise.
md.validateLink = (url) => !/^javascript:/i.test(url);
/** Every inline token of `text` as a CommonMark renderer reads it. */
const inline = (text: string): Token[] => md.parse(text, {}).flatMap((t) => t.children ?? []);

describe('links to the saved files in the plain tool\'s result (unit)', () => {
  it('gives each file one link that opens it, whatever its name holds', () => {
    const files = [
      { name: 'chart (1).png', uri: 'file:///store/r/files/chart%20%281%29.png' },
      { name: 'x](javascript:alert(1)) [y', uri: 'file:///store/r/files/x%5D%28javascript%3Aalert%281%29%29%20%5By' },
    ];
    const text = fileLinks(files);
    assert.equal(
      text,
      'To show the user a saved file, link to it; in the chat each opens the file in VS Code: [chart \\(1\\)\\.png](<file:///store/r/files/chart%20%281%29.png>), ' +
        '[x\\]\\(javascript\\:alert\\(1\\)\\) \\[y](<file:///store/r/files/x%5D%28javascript%3Aalert%281%29%29%20%5By>).',
    );
    const links = inline(text).filter((t) => t.type === 'link_open');
    assert.deepEqual(links.map((t) => t.attrs?.find(([k]) => k === 'href')?.[1]), files.map((f) => f.uri));
    assert.equal(fileLinks([]), '');
  });
});
