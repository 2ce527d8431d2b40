import { z } from 'zod';
import { ToolError } from './errors';
import { MAX_CODE_CHARS } from './limits';

/**
 * The execute_code input as the model sees it. package.json's `inputSchema` is checked
 * against `toolInputJsonSchema()` by a unit test, so the two cannot drift apart.
 */
export const toolInputSchema = z
  .object({
    code: z
      .string()
      .min(1)
      .max(MAX_CODE_CHARS)
      .describe(
        'A complete Python 3 program. It runs as `python3 program.py` in a fresh working directory; only what it prints comes back.',
      ),
    files: z
      .array(z.string().max(1024))
      .max(1000)
      .optional()
      .describe(
        'Workspace files to copy into the working directory before the program runs, by workspace-relative path (e.g. "data/sales.csv"); the program opens them under the same relative path. Read-only.',
      ),
    outputs: z
      .array(z.string().max(1024))
      .max(1000)
      .optional()
      .describe(
        'Files the program will write in its working directory, by relative path (e.g. "chart.png"), to be saved for the user. They are not sent back to you. Only used when the user keeps the default "declared" outputs mode.',
      ),
    reset: z
      .boolean()
      .optional()
      .describe(
        'Only when the user turned on session state (results then end with a "State:" line): true runs this call on an empty state instead of the variables earlier calls kept. Ignored otherwise.',
      ),
    rewind: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .optional()
      .describe(
        'Only with session state: go back this many kept calls before running (1: the state as it was before your last kept call), rebuilt in a new sandbox by re-running the earlier kept calls. Not together with reset.',
      ),
    startFrom: z
      .string()
      .max(200)
      .optional()
      .describe(
        "Only when the user's message gives a CodeAct Sandbox state to start from (a token like \"<16 hex>.<run id>.<20 hex>\"): pass it exactly, on this chat's first call, to start from the state another chat had after one of its runs (rebuilt in a new sandbox by re-running that chat's kept calls). Never on later calls. Not together with reset or rewind.",
      ),
  })
  .strict();

export type ToolInput = z.infer<typeof toolInputSchema>;

export function toolInputJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(toolInputSchema, { target: 'draft-7' }) as Record<string, unknown>;
  delete schema.$schema;
  return schema;
}

/**
 * The host validates input against the declared schema too, but not every caller goes through
 * the host (the CLI, `lm.invokeTool` from other extensions), and a model deserves a sentence
 * it can act on rather than a stack trace.
 */
export function parseToolInput(input: unknown): ToolInput {
  const result = toolInputSchema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const where = issue.path.length ? issue.path.join('.') : 'input';
    if (issue.code === 'invalid_type' && issue.path[0] === 'code') {
      return '`code` must be a string holding the whole Python program';
    }
    if (issue.code === 'too_small' && issue.path[0] === 'code') return '`code` is empty';
    if (issue.code === 'too_big' && issue.path[0] === 'code') {
      return `\`code\` is longer than ${MAX_CODE_CHARS} characters; write a shorter program`;
    }
    if (issue.path[0] === 'reset' && issue.code === 'invalid_type') return '`reset` must be true or false';
    if (issue.path[0] === 'rewind') return '`rewind` must be a whole number of kept calls to go back, 1 or more';
    if (issue.path[0] === 'startFrom') return "`startFrom` must be the token from the user's message, as a string";
    if ((issue.path[0] === 'files' || issue.path[0] === 'outputs') && issue.code === 'invalid_type') {
      return `\`${String(issue.path[0])}\` must be a list of relative path strings like ["data/sales.csv"]`;
    }
    if (issue.code === 'unrecognized_keys') {
      return `unknown parameter(s): ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`;
    }
    if (issue.code === 'invalid_type' && issue.path.length === 0) {
      return 'the input must be an object like {"code": "print(1)"}';
    }
    return `${where}: ${issue.message}`;
  });
  throw new ToolError(
    'invalid_input',
    `Invalid execute_code input: ${problems.join('; ')}. Call execute_code with {"code": "<a complete Python program that prints its results>"}.`,
  );
}
