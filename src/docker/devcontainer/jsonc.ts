import { parse, type ParseError } from 'jsonc-parser';

/**
 * devcontainer.json as the Dev Containers tooling reads it: JSON with comments and trailing
 * commas, through the same parser. jsonc-parser recovers from syntax errors and returns a partial
 * value; we want none of that: a file with any error is undefined (the CLI will say what is wrong,
 * and the hash then covers the file's bytes alone).
 */
export function parseJsonc(text: string): unknown {
  const errors: ParseError[] = [];
  const value: unknown = parse(text, errors, { allowTrailingComma: true, disallowComments: false, allowEmptyContent: false });
  return errors.length === 0 ? value : undefined;
}
