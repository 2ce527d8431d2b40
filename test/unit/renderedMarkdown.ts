import { createRequire } from 'node:module';

/**
 * Markdown as a CommonMark renderer reads it (markdown-it, with HTML and bare links recognised as
 * VS Code's renderer recognises them): what a person sees of it. VS Code drops an HTML block and
 * a link's target, so anything that reaches one of those is text the person never sees.
 */
interface Token {
  type: string;
  content: string;
  info: string;
  children: Token[] | null;
}
interface MarkdownIt {
  parse(src: string, env: object): Token[];
}
const MarkdownIt = createRequire(__filename)('markdown-it') as new (options: object) => MarkdownIt;
const md = new MarkdownIt({ html: true, linkify: true });

/** Tokens that show nothing of their own source, or send it elsewhere. */
const HIDING = new Set(['html_block', 'html_inline', 'link_open', 'image', 'hr']);

export interface Rendered {
  /** Each code block's language and text, in order. */
  blocks: { info: string; text: string }[];
  /** The text of the paragraphs, a code span's content included, paragraphs joined by a blank line. */
  text: string;
  /** The kinds of token found that hide or send away text (html, links, images). */
  hiding: string[];
  /** Every block-level token type, in order (paragraph_open, fence, ...). */
  shape: string[];
}

export function rendered(markdown: string): Rendered {
  const blocks: Rendered['blocks'] = [];
  const paragraphs: string[] = [];
  const hiding: string[] = [];
  const shape: string[] = [];
  for (const t of md.parse(markdown, {})) {
    shape.push(t.type);
    if (HIDING.has(t.type)) hiding.push(t.type);
    if (t.type === 'fence' || t.type === 'code_block') blocks.push({ info: t.info, text: t.content });
    if (t.type !== 'inline') continue;
    let text = '';
    for (const c of t.children ?? []) {
      if (HIDING.has(c.type)) hiding.push(c.type);
      text += c.type === 'softbreak' || c.type === 'hardbreak' ? '\n' : c.content;
    }
    paragraphs.push(text);
  }
  return { blocks, text: paragraphs.join('\n\n'), hiding, shape };
}
