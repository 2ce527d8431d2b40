/**
 * Markdown a person reads (and approves) that holds text a model or a program wrote: a program,
 * a file name, a domain, an image's name. Such text must come out as exactly itself, never as
 * Markdown of its own: a program that closes its code block could show the person one program and
 * run another, with the rest hidden in an HTML block or a link's target (which VS Code drops).
 *
 * The CommonMark rules this rests on: a fenced block ends only at a line of at least as many
 * backticks as opened it, so a fence longer than any backtick run in the code cannot be closed
 * from inside; a code span ends only at a backtick run of its own length, and shows its content
 * literally (one space stripped from each end when both ends have one). Line endings are the one
 * thing a code span cannot hold (a blank line ends the paragraph and what follows is Markdown
 * again): text with them, or with characters that are invisible or reorder what is shown, is shown
 * as a quoted string with those characters escaped.
 */

/** Characters that are invisible or change the order text is shown in (Trojan Source), and controls. */
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\ufff9-\ufffb]/gu;

/** The longest run of backticks in `text`. */
function longestBackticks(text: string): number {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  return longest;
}

/** A fenced code block that shows `code` as it is, whatever it holds. */
export function codeBlock(code: string, language = ''): string {
  const fence = '`'.repeat(Math.max(3, longestBackticks(code) + 1));
  return `${fence}${language}\n${code}${code.endsWith('\n') || code === '' ? '' : '\n'}${fence}`;
}

/**
 * `text` as an inline code span that shows exactly it. Text holding a line ending or a hidden
 * character is shown as a quoted string with those escaped (`"a\nb"`), as JSON writes it.
 */
export function inlineCode(text: string): string {
  const shown = hiddenCount(text) > 0 ? quoted(text) : text;
  if (shown === '') return '""';
  const ticks = '`'.repeat(longestBackticks(shown) + 1);
  // A span whose content starts or ends with a backtick needs a space there, which CommonMark strips again.
  const pad = /^`|`$/.test(shown) || (/^ /.test(shown) && / $/.test(shown) && shown.trim() !== '') ? ' ' : '';
  return `${ticks}${pad}${shown}${pad}${ticks}`;
}

/** How many characters of `text` are invisible, reorder the text around them, or are controls (a tab and a line ending included). */
export function hiddenCount(text: string): number {
  return text.match(HIDDEN)?.length ?? 0;
}

/** The hidden characters of `code` other than tabs and line endings, by their code points (`U+202E`), each named once. */
export function hiddenInCode(code: string): string[] {
  const found = new Set<string>();
  for (const c of code.match(HIDDEN) ?? []) if (!/[\t\n\r]/.test(c)) found.add(`U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`);
  return [...found];
}

function quoted(text: string): string {
  return JSON.stringify(text).replace(HIDDEN, (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}

/**
 * `text` as plain Markdown text: every ASCII punctuation character backslash-escaped (CommonMark
 * allows that for each of them), so none starts a link, HTML, emphasis or a code span; line endings
 * and hidden characters escaped as in `inlineCode`.
 */
export function plainText(text: string): string {
  const shown = hiddenCount(text) > 0 ? quoted(text) : text;
  return shown.replace(/[!-/:-@[-`{-~]/g, '\\$&');
}
