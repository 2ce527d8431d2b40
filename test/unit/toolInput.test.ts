import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { ToolError } from '../../src/core/errors';
import { MAX_CODE_CHARS } from '../../src/core/limits';
import { parseToolInput, toolInputJsonSchema } from '../../src/core/toolInput';

const manifest = JSON.parse(fs.readFileSync('package.json', 'utf8'));

function modelMessageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ToolError);
    assert.equal(e.code, 'invalid_input');
    return e.modelMessage;
  }
  assert.fail('expected a ToolError');
}

describe('tool input (unit)', () => {
  it('package.json declares exactly the schema generated from the zod source', () => {
    const tools = manifest.contributes.languageModelTools;
    assert.equal(tools.length, 1);
    assert.equal(tools[0].name, 'execute_code');
    assert.deepEqual(tools[0].inputSchema, toolInputJsonSchema());
  });

  it('the generated schema requires a non-empty code string; files and outputs are optional lists, reset an optional boolean, rewind a count, startFrom a token', () => {
    const schema = toolInputJsonSchema() as { properties: Record<string, Record<string, unknown>>; required: string[]; additionalProperties: boolean };
    assert.deepEqual(Object.keys(schema.properties), ['code', 'files', 'outputs', 'reset', 'rewind', 'startFrom']);
    assert.deepEqual({ ...schema.properties.startFrom, description: undefined }, { type: 'string', maxLength: 200, description: undefined });
    assert.throws(() => parseToolInput({ code: 'x', startFrom: 7 }), {
      message:
        'Invalid execute_code input: `startFrom` must be the token from the user\'s message, as a string. Call execute_code with {"code": "<a complete Python program that prints its results>"}.',
    });
    assert.deepEqual({ ...schema.properties.reset, description: undefined }, { type: 'boolean', description: undefined });
    assert.deepEqual({ ...schema.properties.rewind, description: undefined }, { type: 'integer', minimum: 1, maximum: 10_000, description: undefined });
    assert.throws(() => parseToolInput({ code: 'x', rewind: 0 }), {
      message:
        'Invalid execute_code input: `rewind` must be a whole number of kept calls to go back, 1 or more. Call execute_code with {"code": "<a complete Python program that prints its results>"}.',
    });
    assert.deepEqual(schema.required, ['code']);
    assert.equal(schema.additionalProperties, false);
    assert.deepEqual(
      { ...schema.properties.code, description: undefined },
      { type: 'string', minLength: 1, maxLength: MAX_CODE_CHARS, description: undefined },
    );
    for (const list of ['files', 'outputs']) {
      assert.deepEqual({ ...schema.properties[list], description: undefined }, { type: 'array', items: { type: 'string', maxLength: 1024 }, maxItems: 1000, description: undefined });
    }
  });

  it('accepts files and outputs, and names a wrong type', () => {
    assert.deepEqual(parseToolInput({ code: 'print(1)', files: ['data/a.csv'], outputs: ['chart.png'] }), {
      code: 'print(1)',
      files: ['data/a.csv'],
      outputs: ['chart.png'],
    });
    assert.match(modelMessageOf(() => parseToolInput({ code: 'print(1)', files: 'data/a.csv' })), /`files` must be a list of relative path strings like \["data\/sales.csv"\]/);
  });

  it('accepts reset, and names a wrong type', () => {
    assert.deepEqual(parseToolInput({ code: 'print(x)', reset: true }), { code: 'print(x)', reset: true });
    assert.equal(
      modelMessageOf(() => parseToolInput({ code: 'print(1)', reset: 'yes' })),
      'Invalid execute_code input: `reset` must be true or false. Call execute_code with {"code": "<a complete Python program that prints its results>"}.',
    );
  });

  it('accepts a program', () => {
    assert.deepEqual(parseToolInput({ code: 'print(1)' }), { code: 'print(1)' });
  });

  it('answers a missing code with a sentence the model can act on', () => {
    assert.equal(
      modelMessageOf(() => parseToolInput({})),
      'Invalid execute_code input: `code` must be a string holding the whole Python program. Call execute_code with {"code": "<a complete Python program that prints its results>"}.',
    );
  });

  it('names empty code, wrong types, unknown parameters and non-objects', () => {
    assert.match(modelMessageOf(() => parseToolInput({ code: '' })), /^Invalid execute_code input: `code` is empty\./);
    assert.match(modelMessageOf(() => parseToolInput({ code: 42 })), /`code` must be a string/);
    assert.match(modelMessageOf(() => parseToolInput({ code: 'print(1)', language: 'js' })), /unknown parameter\(s\): "language"/);
    assert.match(modelMessageOf(() => parseToolInput('print(1)')), /the input must be an object like \{"code": "print\(1\)"\}/);
    assert.match(modelMessageOf(() => parseToolInput(null)), /the input must be an object/);
  });

  it('refuses a program longer than the limit', () => {
    assert.match(
      modelMessageOf(() => parseToolInput({ code: 'x'.repeat(MAX_CODE_CHARS + 1) })),
      new RegExp(`\`code\` is longer than ${MAX_CODE_CHARS} characters`),
    );
  });
});
