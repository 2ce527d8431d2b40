import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { describeError, isToolError } from '../core/errors';
import { checkManifestCaps } from '../core/files/manifest';
import { currentOwner } from '../docker';
import { ArtifactStore, pruneSentence } from '../storage/artifactStore';
import { VERSION } from '../version';
import { answeredBy, codeactApi, type CodeactApi, type PromptAnswerer } from './api';
import { registerArtifactView } from './artifactTree';
import { goBackCommands } from './goBackCommand';
import { SettingsReader } from './config';
import { ExecuteCodeTool } from './executeCodeTool';
import { START_ANSWER, WindowHost } from './windowHost';
import { registerCardDoor } from './cardDoor';
import { cardHtml } from '../mcp';
import { COMMAND, TOOL_NAME } from './ids';
import { createLog } from './log';
import { notebookCommands } from './notebookCommands';
import { sandboxCommands } from './sandboxCommands';
import { registerCommands } from './commands';
import { engineCommands } from './engineCommands';
import { ENGINE_SETTINGS, SandboxService } from './sandboxService';
import { CredentialVault, credentialCommands } from './credentials';
import { ACTION } from './ui';
import { createVscodeUi, createVscodeWorkspace } from './vscodeUi';
import { windowPlace } from './windowPlace';

export type { CodeactApi, TreeSnapshot } from './api';

let service: SandboxService | undefined;

export function activate(context: vscode.ExtensionContext): CodeactApi {
  const { channel, logger } = createLog();
  context.subscriptions.push(channel);
  const ui = createVscodeUi();
  try {
    const workspace = createVscodeWorkspace();
    const settings = new SettingsReader(logger, workspace, ui);
    const initial = settings.read();
    // The host tests name their servers' network in the environment; an installed extension never reads it.
    const testInternetFile = context.extensionMode !== vscode.ExtensionMode.Production ? process.env.CODEACT_SANDBOX_TEST_INTERNET : undefined;
    // Per workspace when there is one, so each project's runs stay with it; never inside the
    // workspace itself: these files were written by model-written code.
    const store = new ArtifactStore(path.join((context.storageUri ?? context.globalStorageUri).fsPath, 'runs'));
    // Where this extension runs against the workspace decides where the engine is looked for (windowPlace.ts).
    const place = windowPlace(vscode.env.remoteName, context.extension.extensionKind, vscode.workspace.workspaceFolders?.[0]?.uri.authority);
    const vault = new CredentialVault(context.secrets, context.globalState);
    const sandboxes = new SandboxService({
      credentials: (bindings) => vault.sandboxCredentials(bindings),
      settings,
      log: logger,
      owner: currentOwner('vscode', VERSION),
      ui,
      workspace,
      state: context.workspaceState,
      globalState: context.globalState,
      engineCliFound: () => commandOnPath('docker') || commandOnPath('podman'),
      place,
      ...(testInternetFile ? { testInternetFile } : {}),
      // Named by the folder's hash: another workspace's window keeps other records, and its chats' images.
      chatRecords: {
        store: createHash('sha256').update(store.root).digest('hex').slice(0, 16),
        exists: (digest) => store.hasSession(digest),
        // The chat's newest run: its prepared image is kept by its chat's last use.
        lastUsed: async (digest) => {
          const newest = (await store.listRuns(digest))[0];
          const at = newest ? Date.parse(newest.startedAt) : NaN;
          return Number.isFinite(at) ? at : undefined;
        },
      },
    });
    service = sandboxes;
    context.subscriptions.push({ dispose: () => void sandboxes.dispose() });

    // The first use walks the store: in the background, never blocking activation.
    const budgetBytes = initial.artifactsBudgetMb * 1024 * 1024;
    void store
      .prune(budgetBytes)
      .then((result) => {
        const said = pruneSentence(result, budgetBytes);
        if (said) logger.info(said);
      })
      .catch((e: unknown) => logger.warn(`could not prune the stored runs: ${describeError(e)}`));
    const { provider: tree, commands: viewCommands, reveal } = registerArtifactView(
      store,
      ui,
      context.subscriptions,
      () => settings.read().artifactsBudgetMb * 1024 * 1024,
      (digest) => void sandboxes.forgetChat(digest).catch((e: unknown) => logger.info(`could not remove the chat's prepared image: ${describeError(e)}`)),
    );
    if (initial.outputsMode === 'manifest') {
      try {
        checkManifestCaps(initial.filesOutMaxFiles);
      } catch (e) {
        const message = isToolError(e) ? e.modelMessage : describeError(e);
        logger.error(message);
        ui.showError(`CodeAct Sandbox: ${message}`, ACTION.openSetting('codeactSandbox.filesOutMaxFiles'), ACTION.showLog);
      }
    }
    // The window's own questions are dialogs; extension tests answer them instead (VS Code refuses dialogs there).
    let answerer: ((question: string) => boolean) | undefined;
    const host = new WindowHost(sandboxes, settings, logger, store, async (question) =>
      answerer ? answerer(question) : (await ui.askModal(question, START_ANSWER)) === START_ANSWER,
    );
    let prompter: PromptAnswerer | undefined;
    const windowKey = `window:${vscode.env.sessionId}`;
    const tool = new ExecuteCodeTool(host, windowKey, () => sandboxes.describe().image, () => sandboxes.willBuild(), (run) =>
      void reveal(run.chat, run.runId).catch((e: unknown) => logger.info(`could not show the new run in the view: ${describeError(e)}`)),
    );
    context.subscriptions.push(vscode.lm.registerTool(TOOL_NAME, tool));
    // The same tool again with the chat's run card, where VS Code renders it (the plain tool is then hidden).
    registerCardDoor(context, host, store, logger, windowKey, cardHtml);

    registerCommands(
      {
        ...viewCommands,
        ...notebookCommands(store, ui, logger, context.extension.id),
        ...goBackCommands(store, tool, ui, () => settings.read().state),
        ...sandboxCommands(sandboxes, ui, logger),
        ...engineCommands(sandboxes, ui, place, context.extension.id),
        ...credentialCommands({ vault, ui: answeredBy(ui, () => prompter), workspace, settings: () => settings.read(), log: logger }),
        [COMMAND.showLog]: () => channel.show(),
        [COMMAND.checkEngine]: () => sandboxes.checkEngine(true),
        [COMMAND.openTroubleshooting]: () => vscode.commands.executeCommand('markdown.showPreview', vscode.Uri.joinPath(context.extensionUri, 'docs', 'troubleshooting.md')),
      },
      context.subscriptions,
    );

    // The engine's state, for the view and the status item before any chat needs it: in the background,
    // and again whenever a setting that names the engine changes.
    void sandboxes.checkEngine(false).then((state) => logger.info(`container engine: ${state}`));
    context.subscriptions.push(vscode.workspace.onDidChangeConfiguration((e) => ENGINE_SETTINGS.some((k) => e.affectsConfiguration(k)) && void sandboxes.checkEngine(false)));

    // Containers left by a window that crashed: removed in the background, never blocking activation.
    void Promise.resolve()
      .then(() => sandboxes.removeOrphans())
      .then(
        (n) => n > 0 && logger.info(`removed ${n} sandbox(es) left by earlier windows`),
        (e: unknown) => logger.info(`orphan cleanup skipped: ${describeError(e)}`),
      );
    logger.info(`CodeAct Sandbox ${VERSION} active; image ${initial.image || 'the data image'}, backend ${initial.backend}`);

    return codeactApi({ sandboxes, tool, settings, store, tree, answerQuestions: (answer) => (answerer = answer), answerPrompts: (answer) => (prompter = answer) });
  } catch (e) {
    // Shown to the user, then rethrown so VS Code marks the activation as failed.
    ui.showError(`CodeAct Sandbox failed to start: ${describeError(e)}`, ACTION.showLog);
    logger.error(`activation failed: ${describeError(e)}`);
    throw e;
  }
}

/** Whether `name` is an executable in a folder of PATH (what the shell would find). */
function commandOnPath(name: string): boolean {
  const exts = process.platform === 'win32' ? ['.exe', '.cmd', ''] : [''];
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir !== '' && exts.some((ext) => fs.existsSync(path.join(dir, `${name}${ext}`))));
}

export async function deactivate(): Promise<void> {
  const s = service;
  service = undefined;
  await s?.dispose();
}
