import * as assert from 'node:assert/strict';
import { ToolError, type ToolErrorCode } from '../../src/core/errors';

/** Runs `fn`, asserts it throws a ToolError (of `code`, when given) and returns it. */
export function thrownToolError(fn: () => unknown, code?: ToolErrorCode): ToolError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ToolError, `expected a ToolError, got ${String(e)}`);
    if (code !== undefined) assert.equal(e.code, code);
    return e;
  }
  assert.fail('expected a ToolError');
}
