/**
 * Reading what the host hands the card. The host relays our own server's data, but the card shows
 * whatever arrives as text and never trusts a shape it did not check: a missing field is empty.
 */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function text(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
}

export function number(value: unknown, otherwise = 0): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : otherwise;
}

export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** The text blocks of a CallToolResult's content, joined (what a result says when it has no card). */
export function contentText(result: Record<string, unknown>): string {
  return list(result.content)
    .filter((block): block is Record<string, unknown> => isObject(block) && block.type === 'text')
    .map((block) => text(block.text))
    .join('\n');
}

/** An error's sentence, whatever was thrown. */
export function reason(error: unknown): string {
  return error instanceof Error ? error.message : text(error);
}
