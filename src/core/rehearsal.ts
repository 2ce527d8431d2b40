/**
 * A call's host path, taken once on made-up values before the first real call (when an MCP client
 * connects): zod compiles a schema at its first parse and V8 compiles a function at its first
 * call, which a CPU profile of the MCP server put at several ms of its first call's 18 ms of work
 * (first call 23.5 ms, later ones 8-10). Pure: nothing is sent, written or kept.
 */
import { capturedFromString } from './capture';
import { formatResult } from './format';
import { encodeFrame, encodeRunRequest, exitReplySchema, HOST_KIND, parseReply, startedReplySchema, type ExitReply, type StartedReply } from './runnerProtocol';
import { parseToolInput, type ToolInput } from './toolInput';

export interface Rehearsed {
  input: ToolInput;
  request: Buffer;
  started: StartedReply;
  exit: ExitReply;
  /** The text the model would be given. */
  text: string;
}

export function rehearseCallPath(): Rehearsed {
  const input = parseToolInput({ code: 'print(1)' });
  const request = encodeFrame(HOST_KIND.run, 1, encodeRunRequest({ dir: '/sandbox/runs/0001-000000', code: Buffer.from(input.code), maxOutputBytes: 1, orphanGraceMs: 1 }));
  const started = parseReply(startedReplySchema, Buffer.from('{"t":"started","pid":2}'), 'started');
  const exit = parseReply(exitReplySchema, Buffer.from('{"t":"exit","exitCode":0,"signal":null,"killed":false,"limited":false,"orphans":false}'), 'exit');
  const text = formatResult({ stdout: capturedFromString('1\n'), stderr: capturedFromString(''), exitCode: exit.exitCode }, 1024);
  return { input, request, started, exit, text };
}
