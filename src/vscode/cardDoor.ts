import * as vscode from 'vscode';
import { describeError } from '../core/errors';
import type { Logger } from '../core/logger';
import type { ArtifactStore } from '../storage/artifactStore';
import { COMMAND, CONFIG_SECTION, MCP_PROVIDER, RUN_CARD_CONTEXT } from './ids';
import type { ArtifactNode } from './artifactItems';
import { cardPathWorks, type CardPathFacts } from './cardPath';
import { openCardDoor, type CardDoorHandle } from './cardServer';
import type { WindowHost } from './windowHost';

/**
 * The chat's run card: VS Code renders an MCP App inline for an MCP tool whose result points to
 * one, and an extension may offer its own MCP server (lm.registerMcpServerDefinitionProvider). So
 * the window offers execute_code a second time, through a loopback MCP server of its own over the
 * same host (one pool, one store, one view), with the card. Where the card path works the
 * language-model tool is hidden (its `when` clause reads RUN_CARD_CONTEXT), so the model never
 * sees two copies; where it does not (an older VS Code, MCP Apps turned off, the person prefers
 * the plain tool, or each run is to be confirmed with the project's own question), the plain tool
 * stays and the server is not offered.
 */
export function registerCardDoor(context: vscode.ExtensionContext, host: WindowHost, store: ArtifactStore, log: Logger, windowKey: string, html: () => string): void {
  let door: Promise<CardDoorHandle | undefined> | undefined;
  const changed = new vscode.EventEmitter<void>();
  const facts = (): CardPathFacts => ({
    api: typeof vscode.lm.registerMcpServerDefinitionProvider === 'function',
    appsEnabled: vscode.workspace.getConfiguration('chat.mcp.apps').get<boolean>('enabled', true),
    runCard: host.settings.read().runCard,
    confirmBeforeRun: host.settings.read().confirmBeforeRun,
  });
  const open = (): Promise<CardDoorHandle | undefined> =>
    (door ??= openCardDoor({ host, store, log, windowKey, html, act: (run, name, action) => act(store, run, name, action) }).catch((e: unknown) => {
      log.warn(`the chat's run card is off: its server could not start (${describeError(e)})`);
      door = undefined;
      return undefined;
    }));
  const update = async () => {
    const works = cardPathWorks(facts());
    await vscode.commands.executeCommand('setContext', RUN_CARD_CONTEXT, works);
    changed.fire();
  };
  if (!facts().api) {
    void update();
    return;
  }
  context.subscriptions.push(
    changed,
    vscode.lm.registerMcpServerDefinitionProvider(MCP_PROVIDER, {
      onDidChangeMcpServerDefinitions: changed.event,
      provideMcpServerDefinitions: () => (cardPathWorks(facts()) ? [new vscode.McpHttpServerDefinition('CodeAct Sandbox', vscode.Uri.parse('http://127.0.0.1/mcp'))] : []),
      // Opened when VS Code starts the server, not before: a window that never uses it listens on nothing.
      resolveMcpServerDefinition: async (def) => {
        const d = await open();
        if (!d || !(def instanceof vscode.McpHttpServerDefinition)) return undefined;
        def.uri = vscode.Uri.parse(d.url);
        def.headers = d.headers;
        return def;
      },
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration(`${CONFIG_SECTION}.runCard`) || e.affectsConfiguration(`${CONFIG_SECTION}.confirmBeforeRun`) || e.affectsConfiguration('chat.mcp.apps.enabled')) void update();
    }),
    { dispose: () => void door?.then((d) => d?.close()) },
  );
  void update();
}

/** The card's buttons, as the view's own commands carry them out (Save asks the person where). */
async function act(store: ArtifactStore, run: { chat: string; run: string }, name: string | undefined, action: 'open' | 'save' | 'notebook'): Promise<{ done: boolean; message: string }> {
  const record = store.readRun(run.chat, run.run);
  if (!record) return { done: false, message: 'This run is no longer stored.' };
  if (action === 'notebook') {
    const node: ArtifactNode = { kind: 'run', sessionDigest: run.chat, record };
    const opened = await vscode.commands.executeCommand<string | undefined>(COMMAND.openNotebook, node);
    return { done: opened !== undefined, message: opened !== undefined ? 'Opened as a notebook.' : 'The notebook could not be made.' };
  }
  const file = record.files.find((f) => f.name === name);
  if (!file) return { done: false, message: `${name ?? 'That file'} is not a saved file of this run.` };
  const node: ArtifactNode = { kind: 'file', sessionDigest: run.chat, record, file };
  await vscode.commands.executeCommand(action === 'open' ? COMMAND.openFile : COMMAND.saveFile, node);
  return { done: true, message: action === 'open' ? `Opened ${file.name}.` : `Asked where to save ${file.name}.` };
}
