import * as assert from 'node:assert/strict';
import { codeBlock, hiddenInCode, inlineCode, plainText } from '../../src/core/markdown';
import { rendered } from './renderedMarkdown';

/** Text a model or a program wrote, put into Markdown a person reads: it must show as exactly itself. */
describe('Markdown around text a model wrote (unit)', () => {
  const nasty = ['plain', 'a`b', '`', '``x``', 'x`', ' a ', '  ', 'a\n\nb', '<b>x</b>', '[x](https://evil.example)', '<!-- hidden -->', '*em* _em_', '\\`', 'a\r\nb', '\u202ereversed'];

  it('a code span sized past the longest backtick run shows the text as it is; one with a line ending or a hidden character shows it quoted', () => {
    for (const text of nasty) {
      const shown = rendered(`Name: ${inlineCode(text)}.`);
      const expected = /[\n\r\u202e]/.test(text) ? JSON.stringify(text).replace('\u202e', '\\u202e') : text;
      assert.deepEqual([shown.text, shown.hiding, shown.shape], [`Name: ${expected}.`, [], ['paragraph_open', 'inline', 'paragraph_close']], JSON.stringify(text));
    }
    assert.equal(inlineCode('a`b'), '``a`b``');
    assert.equal(inlineCode('`x'), '`` `x ``');
    assert.equal(inlineCode(''), '""');
  });

  it('plain text escapes every ASCII punctuation character, so nothing in it is Markdown', () => {
    for (const text of nasty) {
      const shown = rendered(`Engine: ${plainText(text)}`);
      const expected = /[\n\r\u202e]/.test(text) ? JSON.stringify(text).replace('\u202e', '\\u202e') : text;
      assert.deepEqual([shown.text, shown.hiding], [`Engine: ${expected}`.trimEnd(), []], JSON.stringify(text));
    }
  });

  it('a fenced block longer than any backtick run holds any program, and nothing follows it', () => {
    for (const code of [...nasty, '```\n<!--\n', '   ````\n[x]: https://evil.example "title"', '~~~\n~~~', '````````````````']) {
      const shown = rendered(codeBlock(code, 'python'));
      // Line endings are read as such by Markdown and by Python alike.
      const lines = code.replace(/\r\n?/g, '\n');
      assert.deepEqual(shown, { blocks: [{ info: 'python', text: lines.endsWith('\n') || lines === '' ? lines : `${lines}\n` }], text: '', hiding: [], shape: ['fence'] }, JSON.stringify(code));
    }
  });

  it('names the characters in a program that are invisible or reorder what is shown, not tabs or line endings', () => {
    assert.deepEqual(hiddenInCode('a\tb\r\nc\u202ed\u200b\u202e\u00ad'), ['U+202E', 'U+200B', 'U+00AD']);
    assert.deepEqual(hiddenInCode('print("héllo")\n'), []);
  });
});
