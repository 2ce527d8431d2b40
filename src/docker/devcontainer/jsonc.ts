/**
 * JSON with comments and trailing commas, as devcontainer.json allows. Undefined when it is not
 * even that (the CLI will say what is wrong; we then hash the bytes alone).
 */
export function parseJsonc(text: string): unknown {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 2;
    } else {
      out += c;
      i++;
    }
  }
  // Trailing commas, outside strings: strings were copied verbatim, so match around them.
  const noTrailing = out.replace(/("(?:[^"\\]|\\.)*")|,(\s*[}\]])/g, (m, str: string | undefined, close: string | undefined) => str ?? close ?? m);
  try {
    return JSON.parse(noTrailing) as unknown;
  } catch {
    return undefined;
  }
}
