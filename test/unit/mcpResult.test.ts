import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { ToolError } from '../../src/core/errors';
import type { Logger } from '../../src/core/logger';
import { TOOL_DESCRIPTION, TOOL_NAME, TOOL_TITLE } from '../../src/core/toolDescription';
import { toolInputJsonSchema } from '../../src/core/toolInput';
import { UNEXPECTED, failureResult, successResult, toolDefinition } from '../../src/mcp/toolResult';

const manifest = JSON.parse(fs.readFileSync('package.json', 'utf8'));

function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (m: string) => lines.push(`${level}: ${m}`);
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

describe('MCP result mapping (unit)', () => {
  it('names and describes the tool exactly as package.json does for VS Code', () => {
    const declared = manifest.contributes.languageModelTools[0];
    assert.equal(TOOL_NAME, declared.name);
    assert.equal(TOOL_TITLE, declared.displayName);
    assert.equal(TOOL_DESCRIPTION, declared.modelDescription);
    assert.deepEqual(toolDefinition(), {
      name: 'execute_code',
      title: 'Execute Python in a sandbox',
      description: declared.modelDescription,
      inputSchema: declared.inputSchema,
    });
    assert.deepEqual(toolDefinition().inputSchema, toolInputJsonSchema());
  });

  it('returns the result text as the one text content, unchanged', () => {
    assert.deepEqual(successResult('stdout:\n42\n\nexit code: 3', []), { content: [{ type: 'text', text: 'stdout:\n42\n\nexit code: 3' }] });
  });

  it('returns images after the text, base64 with the type sniffed from their bytes', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 9]);
    assert.deepEqual(
      successResult('stdout:\nplotted', [
        { name: 'chart.png', mimeType: 'image/png', bytes: png },
        { name: 'out/photo.jpg', mimeType: 'image/jpeg', bytes: jpeg },
      ]),
      {
        content: [
          { type: 'text', text: 'stdout:\nplotted' },
          { type: 'image', data: 'iVBORw0KGgoBAgM=', mimeType: 'image/png' },
          { type: 'image', data: '/9j/4Ak=', mimeType: 'image/jpeg' },
        ],
      },
    );
  });

  it('turns a tool failure into an isError result with its model-facing sentence, logging nothing', () => {
    const log = recordingLogger();
    const sentence = 'Invalid execute_code input: `code` is empty. Call execute_code with {"code": "<a complete Python program that prints its results>"}.';
    assert.deepEqual(failureResult(new ToolError('invalid_input', sentence), log), { content: [{ type: 'text', text: sentence }], isError: true });
    assert.deepEqual(log.lines, []);
  });

  it('keeps the detail of an unexpected failure in the log and gives the model one sentence', () => {
    const log = recordingLogger();
    assert.deepEqual(failureResult(new RangeError('socket hang up at 10.0.0.7:2376'), log), { content: [{ type: 'text', text: UNEXPECTED }], isError: true });
    assert.equal(UNEXPECTED, "The sandbox failed unexpectedly. Ask the user to check the CodeAct Sandbox server's log (its standard error).");
    assert.deepEqual(log.lines, ['error: execute_code: RangeError: socket hang up at 10.0.0.7:2376']);
  });
});
