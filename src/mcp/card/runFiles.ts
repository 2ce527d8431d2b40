import * as fs from 'node:fs';
import { parse } from 'csv-parse/sync';
import type { CardInputs, CardResults } from './contract';
import { CARD_FILE_BYTES } from './names';

/**
 * A stored run's files as its card reads them: an image whole, a table a page at a time. The path
 * comes from the store (its own rules for a stored name); nothing here follows the program's word.
 */

/** Largest table read to page through; a bigger file shows its first rows, and says it was cut. */
export const TABLE_MAX_BYTES = 32 * 1024 * 1024;

/** A stored file's bytes for the card to show (an image: its type as the host sniffed it). */
export function fileForCard(file: string, mediaType: string | undefined): CardResults['file'] | { refused: string } {
  const size = fs.statSync(file).size;
  if (size > CARD_FILE_BYTES) return { refused: `the file is ${size} bytes, over the ${CARD_FILE_BYTES} a card shows` };
  return { mediaType: mediaType ?? 'application/octet-stream', size, base64: fs.readFileSync(file).toString('base64') };
}

/** A page of a CSV or TSV file's rows (its first row is the header), sorted by one column when asked. */
export function tablePage(file: string, name: string, ask: Pick<CardInputs['table'], 'offset' | 'limit' | 'sort'>): CardResults['table'] {
  const { text, truncated } = readUpTo(file, TABLE_MAX_BYTES);
  const rows = parse(text, {
    delimiter: /\.tsv$/i.test(name) ? '\t' : ',',
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: true,
    bom: true,
    // A file cut at the limit may end inside a quoted field: the rows before it are what is shown.
    skip_records_with_error: truncated,
  }) as string[][];
  const [columns = [], ...data] = rows;
  if (ask.sort) {
    const { column, descending } = ask.sort;
    const order = collate(data.map((r) => r[column] ?? ''));
    data.sort((a, b) => order(a[column] ?? '', b[column] ?? '') * (descending ? -1 : 1));
  }
  return { columns, rows: data.slice(ask.offset, ask.offset + ask.limit), total: data.length, offset: ask.offset, truncated };
}

/** Numbers as numbers when every non-empty cell of the column is one, else text in the person's locale order. */
function collate(cells: readonly string[]): (a: string, b: string) => number {
  const numeric = cells.every((c) => c.trim() === '' || Number.isFinite(Number(c)));
  if (numeric) return (a, b) => (a.trim() === '' ? -Infinity : Number(a)) - (b.trim() === '' ? -Infinity : Number(b)) || 0;
  const text = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });
  return (a, b) => text.compare(a, b);
}

function readUpTo(file: string, max: number): { text: string; truncated: boolean } {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const buf = Buffer.alloc(Math.min(size, max));
    fs.readSync(fd, buf, 0, buf.length, 0);
    let text = buf.toString('utf8');
    if (size > max) text = text.slice(0, text.lastIndexOf('\n') + 1);
    return { text, truncated: size > max };
  } finally {
    fs.closeSync(fd);
  }
}
