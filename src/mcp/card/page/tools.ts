/**
 * The app-only tools (src/mcp/card/contract.ts), called through the host (`tools/call`). Each
 * answers in its result's structuredContent; a refusal is a result with isError and a sentence.
 */
import type { CardInputs, CardResults } from '../contract';
import { CARD_TOOL } from '../names';
import type { Bridge } from './bridge';
import { contentText, isObject } from './data';

export type Tool = keyof typeof CARD_TOOL;
export type CallTool = <K extends Tool>(tool: K, args: CardInputs[K]) => Promise<CardResults[K]>;

/** A tool answered with an error: its sentence is what the card shows. */
export class ToolFailed extends Error {}

export function toolCaller(bridge: Bridge): CallTool {
  return async <K extends Tool>(tool: K, args: CardInputs[K]): Promise<CardResults[K]> => {
    const name = CARD_TOOL[tool];
    const result = await bridge.request('tools/call', { name, arguments: args });
    if (!isObject(result)) throw new ToolFailed(`${name} gave no result`);
    if (result.isError === true) throw new ToolFailed(contentText(result) || `${name} failed`);
    if (!isObject(result.structuredContent)) throw new ToolFailed(`${name} gave no structured result`);
    return result.structuredContent as CardResults[K];
  };
}
