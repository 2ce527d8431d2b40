import { z } from 'zod';
import { ToolError } from '../errors';
import { bytesText, checkNameList } from './names';

/**
 * MANIFEST mode: the program itself lists what it produced, for outputs whose names it only
 * knows after reading its input. The one accepted format is
 *
 *     {"files": ["chart.png", "out/table.csv"]}
 *
 * written as `outputs.json` in the program's working directory: an object whose `files` is a
 * list of names relative to that directory. Other keys are ignored. One format, so a model
 * told about it once writes it right, and a refusal can show it verbatim.
 *
 * Everything in the file comes from the guest, so it is parsed as hostile: size checked before
 * decoding, nesting checked before JSON.parse, every name held to the same path rules as names
 * the model gives, and the whole manifest refused on any problem rather than half-honoured.
 */
export const MANIFEST_NAME = 'outputs.json';
export const MANIFEST_EXAMPLE = '{"files": ["chart.png", "out/table.csv"]}';
/** The format needs depth 2; anything far deeper is an attack on the parser, not a manifest. */
export const MAX_MANIFEST_DEPTH = 8;

/**
 * Only the names are read. Fields such as `mediaType`, `type` or `mime` are never taken from
 * the guest, here or per entry: a media type decides how a viewer renders bytes that
 * model-written code produced. The host sniffs images itself (see magic.ts). Unknown top-level
 * keys are stripped by zod's default object parsing; object entries fail the string check.
 */
const manifestShape = z.object({ files: z.array(z.unknown()) });

export type ManifestResult = { ok: true; names: string[] } | { ok: false; problems: string[] };

export interface ManifestOptions {
  maxBytes: number;
  /** The run's cap on collected files, outputs.json included: at most `maxFiles - 1` artifacts. */
  maxFiles: number;
}

/**
 * The manifest is collected like any other file, so it takes one slot of the cap; a cap below
 * 2 could never collect an artifact, which is a configuration mistake to report up front.
 */
export function checkManifestCaps(maxFiles: number): void {
  if (!Number.isInteger(maxFiles) || maxFiles < 2) {
    throw new ToolError(
      'invalid_settings',
      `Collecting files through ${MANIFEST_NAME} needs a limit of at least 2 files per run: one for ${MANIFEST_NAME} and one for a file. The limit is ${maxFiles}.`,
    );
  }
}

/** How many artifacts a manifest may list under a run's file cap. */
export function manifestArtifactCap(maxFiles: number): number {
  checkManifestCaps(maxFiles);
  return maxFiles - 1;
}

/**
 * The validated, de-duplicated names `outputs.json` lists (itself left out), or sentences for
 * the model saying why the manifest was refused. Guest text is never quoted back except names
 * that passed the path rules. Throws only for a cap that is itself invalid.
 */
export function parseManifest(bytes: Buffer, opts: ManifestOptions): ManifestResult {
  const cap = manifestArtifactCap(opts.maxFiles);
  const refuse = (...problems: string[]): ManifestResult => ({ ok: false, problems });
  if (bytes.length > opts.maxBytes) {
    return refuse(`${MANIFEST_NAME} is ${bytesText(bytes.length)}, over its limit of ${bytesText(opts.maxBytes)}. List only the file names, as ${MANIFEST_EXAMPLE}.`);
  }
  if (nestingDepth(bytes, MAX_MANIFEST_DEPTH) > MAX_MANIFEST_DEPTH) {
    return refuse(`${MANIFEST_NAME} is nested more than ${MAX_MANIFEST_DEPTH} levels deep. Write it as ${MANIFEST_EXAMPLE}.`);
  }
  let text: string;
  try {
    // A leading byte-order mark is dropped (Python's utf-8-sig writes one); invalid UTF-8 is refused.
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return refuse(`${MANIFEST_NAME} is not UTF-8 text. Write it as ${MANIFEST_EXAMPLE}, for example with json.dump.`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the input; the guest's text is not repeated to the model.
    return refuse(`${MANIFEST_NAME} is not valid JSON. Write it as ${MANIFEST_EXAMPLE}, for example with json.dump.`);
  }
  const shaped = manifestShape.safeParse(value);
  if (!shaped.success) {
    return refuse(`${MANIFEST_NAME} must be an object with a "files" list of names, exactly like ${MANIFEST_EXAMPLE}.`);
  }
  const entries = shaped.data.files;
  const notStrings = entries.flatMap((e, i) => (typeof e === 'string' ? [] : [i + 1]));
  if (notStrings.length > 0) {
    const shown = notStrings.slice(0, 10).join(', ') + (notStrings.length > 10 ? ', ...' : '');
    const which = notStrings.length === 1 ? `entry ${shown} is not` : `entries ${shown} are not`;
    return refuse(`Every entry of "files" in ${MANIFEST_NAME} must be a file name string like "chart.png"; ${which}.`);
  }
  const { valid, problems } = checkNameList(entries as string[], { noun: 'name', where: ` in ${MANIFEST_NAME}` }, [MANIFEST_NAME]);
  if (valid.length > cap) {
    problems.push(
      `${MANIFEST_NAME} lists ${valid.length} files; at most ${cap} can be collected from one program (the limit is ${opts.maxFiles} files and ${MANIFEST_NAME} takes one). Write fewer files, for example one archive.`,
    );
  }
  return problems.length > 0 ? refuse(...problems) : { ok: true, names: valid };
}

/**
 * Deepest nesting of arrays and objects, counting only brackets outside strings, stopping as
 * soon as `limit` is exceeded. A byte scan needs no stack, so a megabyte of '[' costs nothing.
 * Structural characters are ASCII and never occur inside a UTF-8 multi-byte sequence.
 */
export function nestingDepth(bytes: Buffer, limit = Infinity): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === 0x5c) i++; // backslash: skip the escaped byte
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x5b || b === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (b === 0x5d || b === 0x7d) depth--;
  }
  return deepest;
}
