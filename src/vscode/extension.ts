import * as path from 'node:path';
import * as vscode from 'vscode';
import { describeError, isToolError } from '../core/errors';
import { checkManifestCaps } from '../core/files/manifest';
import { ImageBuildError } from '../docker/images';
import { currentOwner } from '../docker/labels';
import { ArtifactStore } from '../storage/artifactStore';
import { VERSION } from '../version';
import { registerArtifactView, type ArtifactNode } from './artifactTree';
import { SettingsReader } from './config';
import { ExecuteCodeTool } from './executeCodeTool';
import { COMMAND, TOOL_NAME } from './ids';
import { createLog } from './log';
import { registerNotebookCommands } from './notebookCommands';
import { SandboxService } from './sandboxService';
import { createVscodeUi, createVscodeWorkspace } from './vscodeUi';

/** What the extension hands to other extensions and to its own tests. */
export interface CodeactApi {
  /** Live sandboxes by session key: lets tests check reuse and isolation. */
  sandboxes(): { sessionKey: string; containerId: string; image: string }[];
  sessionKeyOf(token: unknown): string;
  /** Invalid setting values reported so far. */
  settingsProblems(): string[];
  /** Where runs and produced files are kept. */
  artifactsRoot: string;
  /** The artifact tree as rendered: label, description and children of every item. */
  treeSnapshot(): Promise<TreeSnapshot[]>;
  /** The artifact tree's nodes under `parent` (the sessions without one), as its commands take them. */
  treeNodes(parent?: ArtifactNode): Promise<ArtifactNode[]>;
  /** The backend, image and engine of the latest sandbox (as the status bar shows them). */
  backend(): { backend?: string; reason?: string; image?: string; engine?: string; runtime?: string };
}

export interface TreeSnapshot {
  label: string;
  description?: string;
  resourceUri?: string;
  children: TreeSnapshot[];
}

let service: SandboxService | undefined;

export function activate(context: vscode.ExtensionContext): CodeactApi {
  const { channel, logger } = createLog();
  context.subscriptions.push(channel);
  const ui = createVscodeUi();
  try {
    const workspace = createVscodeWorkspace();
    const settings = new SettingsReader(logger, workspace, ui);
    const initial = settings.read();
    const sandboxes = new SandboxService({ settings, log: logger, owner: currentOwner('vscode', VERSION), ui, workspace, state: context.workspaceState });
    service = sandboxes;
    context.subscriptions.push({ dispose: () => void sandboxes.dispose() });

    // Per workspace when there is one, so each project's runs stay with it; never inside the
    // workspace itself: these files were written by model-written code.
    const store = new ArtifactStore(path.join((context.storageUri ?? context.globalStorageUri).fsPath, 'runs'));
    // The first use walks the store: in the background, never blocking activation.
    void store.prune(initial.artifactsBudgetMb * 1024 * 1024).catch((e: unknown) => logger.warn(`could not prune the stored runs: ${describeError(e)}`));
    const tree = registerArtifactView(store, ui, context.subscriptions);
    registerNotebookCommands(store, ui, logger, context.subscriptions);
    if (initial.outputsMode === 'manifest') {
      try {
        checkManifestCaps(initial.filesOutMaxFiles);
      } catch (e) {
        const message = isToolError(e) ? e.modelMessage : describeError(e);
        logger.error(message);
        ui.showError(`CodeAct Sandbox: ${message}`);
      }
    }
    const tool = new ExecuteCodeTool(sandboxes, settings, logger, `window:${vscode.env.sessionId}`, store, () => sandboxes.describe().image);
    context.subscriptions.push(vscode.lm.registerTool(TOOL_NAME, tool));

    context.subscriptions.push(
      vscode.commands.registerCommand(COMMAND.showLog, () => channel.show()),
      vscode.commands.registerCommand(COMMAND.removeSandboxes, async () => {
        const n = await sandboxes.removeAll().catch((e: unknown) => {
          logger.error(describeError(e));
          return 0;
        });
        ui.showInfo(`CodeAct Sandbox: removed ${n} sandbox${n === 1 ? '' : 'es'}.`);
      }),
      vscode.commands.registerCommand(COMMAND.prepareImage, async () => {
        const started = Date.now();
        try {
          const prepared = await sandboxes.prepareImage();
          if ('notUsed' in prepared) {
            ui.showInfo(`CodeAct Sandbox: ${prepared.notUsed}, so the sandbox does not use the data image; nothing was built.`);
            return prepared;
          }
          const took = ((Date.now() - started) / 1000).toFixed(1);
          ui.showInfo(
            prepared.built.length
              ? `CodeAct Sandbox: the sandbox image ${prepared.tag} is ready (built in ${took} s).`
              : `CodeAct Sandbox: the sandbox image ${prepared.tag} was already built.`,
          );
          return prepared;
        } catch (e) {
          logger.error(`preparing the sandbox image failed: ${describeError(e)}`);
          // A build failure was shown by the build's own notification already.
          if (!(e instanceof ImageBuildError)) ui.showError(`CodeAct Sandbox: ${isToolError(e) ? e.modelMessage : describeError(e)}`);
          return undefined;
        }
      }),
      vscode.commands.registerCommand(COMMAND.rebuildDevcontainer, async () => {
        try {
          await sandboxes.rebuildDevcontainer();
          ui.showInfo('CodeAct Sandbox: the Dev Container image was rebuilt; the next call uses it.');
        } catch (e) {
          logger.error(`rebuild failed: ${describeError(e)}`);
          ui.showError(`CodeAct Sandbox: ${isToolError(e) ? e.modelMessage : describeError(e)}`);
        }
      }),
    );

    // Containers left by a window that crashed: removed in the background, never blocking activation.
    void Promise.resolve()
      .then(() => sandboxes.removeOrphans())
      .then(
        (n) => n > 0 && logger.info(`removed ${n} sandbox(es) left by earlier windows`),
        (e: unknown) => logger.info(`orphan cleanup skipped: ${describeError(e)}`),
      );
    logger.info(`CodeAct Sandbox ${VERSION} active; image ${initial.image || 'the data image'}, backend ${initial.backend}`);

    return {
      sandboxes: () =>
        [...sandboxes.active.entries()].map(([sessionKey, s]) => ({ sessionKey, containerId: s.id, image: s.image })),
      sessionKeyOf: (token) => tool.sessionKeyOf(token),
      settingsProblems: () => settings.problems,
      artifactsRoot: store.root,
      backend: () => sandboxes.describe(),
      treeNodes: (parent) => tree.getChildren(parent),
      treeSnapshot: () => {
        const walk = async (node?: ArtifactNode): Promise<TreeSnapshot[]> =>
          Promise.all(
            (await tree.getChildren(node)).map(async (child) => {
              const item = tree.getTreeItem(child);
              const label = typeof item.label === 'string' ? item.label : (item.label?.label ?? '');
              return {
                label,
                ...(typeof item.description === 'string' ? { description: item.description } : {}),
                ...(item.resourceUri ? { resourceUri: item.resourceUri.toString() } : {}),
                children: await walk(child),
              };
            }),
          );
        return walk();
      },
    };
  } catch (e) {
    // Shown to the user, then rethrown so VS Code marks the activation as failed.
    ui.showError(`CodeAct Sandbox failed to start: ${describeError(e)}`);
    logger.error(`activation failed: ${describeError(e)}`);
    throw e;
  }
}

export async function deactivate(): Promise<void> {
  const s = service;
  service = undefined;
  await s?.dispose();
}
