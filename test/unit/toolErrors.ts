import * as assert from 'node:assert/strict';
import { ToolError, type ToolErrorCode } from '../../src/core/errors';

/** Asserts `e` is a ToolError (of `code`, when given) and returns it. */
function asToolError(e: unknown, code: ToolErrorCode | undefined): ToolError {
  assert.ok(e instanceof ToolError, `expected a ToolError, got ${String(e)}`);
  if (code !== undefined) assert.equal(e.code, code);
  return e;
}

/** Runs `fn`, asserts it throws a ToolError (of `code`, when given) and returns it. */
export function thrownToolError(fn: () => unknown, code?: ToolErrorCode): ToolError {
  try {
    fn();
  } catch (e) {
    return asToolError(e, code);
  }
  assert.fail('expected a ToolError');
}

/** The same for a promise: awaits it, asserts it rejects with a ToolError and returns it. */
export async function rejectedToolError(p: Promise<unknown>, code?: ToolErrorCode): Promise<ToolError> {
  try {
    await p;
  } catch (e) {
    return asToolError(e, code);
  }
  assert.fail('expected a ToolError');
}
