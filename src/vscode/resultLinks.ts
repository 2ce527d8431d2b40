import { plainText } from '../core/markdown';

/**
 * The saved files as links the model can pass on in its answer: in the chat, each opens the file
 * in VS Code (the run card shows them itself). Names are the program's: each is escaped so it stays
 * one link's text, and the target is written in angle brackets, which no parenthesis in a name can
 * end (the URI has no angle bracket or line end of its own: a URI's text encodes them).
 */
export function fileLinks(files: readonly { name: string; uri: string }[]): string {
  const usable = files.filter((f) => !/[<>\s]/.test(f.uri));
  if (usable.length === 0) return '';
  return `To show the user a saved file, link to it; in the chat each opens the file in VS Code: ${usable.map((f) => `[${plainText(f.name)}](<${f.uri}>)`).join(', ')}.`;
}
