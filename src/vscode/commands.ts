import * as vscode from 'vscode';
import { COMMAND } from './ids';

export type CommandId = (typeof COMMAND)[keyof typeof COMMAND];
// Arguments come from VS Code (a tree node, a test's options): each handler checks its own.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type CommandHandler = (...args: any[]) => unknown;

/** Some of the extension's commands, by id: each module that owns commands returns its part. */
export type CommandTable<K extends CommandId = CommandId> = Record<K, CommandHandler>;

/**
 * Registers every command of the extension in one loop. Typed as the whole table, so a command
 * declared in ids.ts (and package.json) but handled nowhere does not compile.
 */
export function registerCommands(table: CommandTable, subscriptions: vscode.Disposable[]): void {
  for (const [id, handler] of Object.entries(table) as Array<[CommandId, CommandHandler]>) {
    subscriptions.push(vscode.commands.registerCommand(id, handler));
  }
}

export { COMMAND };
