import * as path from 'node:path';
import * as vscode from 'vscode';
import { describeError } from '../core/errors';
import { sandboxLimitsOf } from '../core/settings';
import { removeOrphanedSandboxes } from '../docker/cleanup';
import { createDockerClient } from '../docker/connection';
import { DockerSandboxProvider } from '../docker/dockerSandboxProvider';
import { currentOwner } from '../docker/labels';
import { ArtifactStore } from '../storage/artifactStore';
import { checkManifestCaps } from '../core/files/manifest';
import { isToolError } from '../core/errors';
import { registerArtifactView, type ArtifactNode } from './artifactTree';
import { VERSION } from '../version';
import { SettingsReader } from './config';
import { ExecuteCodeTool } from './executeCodeTool';
import { COMMAND, CONFIG_SECTION, TOOL_NAME } from './ids';
import { createLog } from './log';

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
  treeSnapshot(): TreeSnapshot[];
}

export interface TreeSnapshot {
  label: string;
  description?: string;
  resourceUri?: string;
  children: TreeSnapshot[];
}

let provider: DockerSandboxProvider | undefined;

export function activate(context: vscode.ExtensionContext): CodeactApi {
  const { channel, logger } = createLog();
  context.subscriptions.push(channel);
  try {
    const settings = new SettingsReader(logger);
    const docker = createDockerClient();
    const owner = currentOwner('vscode', VERSION);
    const initial = settings.read();
    provider = new DockerSandboxProvider({
      docker,
      owner,
      spec: () => {
        const s = settings.read();
        return { image: s.image, limits: sandboxLimitsOf(s), warmRunner: s.warmRunner, preloadModules: s.preloadModules };
      },
      imageSettingHint: `the ${CONFIG_SECTION}.image setting`,
      log: logger,
      idleMs: initial.idleMinutes * 60_000,
      onPull: (image, pull) =>
        Promise.resolve(
          vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: `CodeAct Sandbox: pulling ${image}`, cancellable: true },
            async (progress, token) => {
              const abort = new AbortController();
              const sub = token.onCancellationRequested(() => abort.abort());
              let last = 0;
              try {
                await pull((message, fraction) => {
                  const increment = fraction === undefined ? undefined : Math.max(0, fraction * 100 - last);
                  if (fraction !== undefined) last = fraction * 100;
                  progress.report({ message, ...(increment !== undefined ? { increment } : {}) });
                }, abort.signal);
              } finally {
                sub.dispose();
              }
            },
          ),
        ),
    });
    const active = provider;
    context.subscriptions.push({ dispose: () => void active.dispose() });

    // Per workspace when there is one, so each project's runs stay with it; never inside the
    // workspace itself: these files were written by model-written code.
    const store = new ArtifactStore(path.join((context.storageUri ?? context.globalStorageUri).fsPath, 'runs'));
    store.prune(initial.artifactsBudgetMb * 1024 * 1024);
    const tree = registerArtifactView(store, context.subscriptions);
    if (initial.outputsMode === 'manifest') {
      try {
        checkManifestCaps(initial.filesOutMaxFiles);
      } catch (e) {
        const message = isToolError(e) ? e.modelMessage : describeError(e);
        logger.error(message);
        void vscode.window.showErrorMessage(`CodeAct Sandbox: ${message}`);
      }
    }
    const tool = new ExecuteCodeTool(provider, settings, logger, `window:${vscode.env.sessionId}`, store);
    context.subscriptions.push(vscode.lm.registerTool(TOOL_NAME, tool));

    context.subscriptions.push(
      vscode.commands.registerCommand(COMMAND.showLog, () => channel.show()),
      vscode.commands.registerCommand(COMMAND.removeSandboxes, async () => {
        const n = await active.removeAll().catch((e: unknown) => {
          logger.error(describeError(e));
          return 0;
        });
        void vscode.window.showInformationMessage(`CodeAct Sandbox: removed ${n} sandbox${n === 1 ? '' : 'es'}.`);
      }),
    );

    // Containers left by a window that crashed: removed in the background, never blocking activation.
    void removeOrphanedSandboxes(docker, owner, logger).then(
      (n) => n > 0 && logger.info(`removed ${n} sandbox(es) left by earlier windows`),
      (e: unknown) => logger.info(`orphan cleanup skipped: ${describeError(e)}`),
    );
    logger.info(`CodeAct Sandbox ${VERSION} active; image ${initial.image}`);

    return {
      sandboxes: () =>
        [...active.active.entries()].map(([sessionKey, s]) => ({ sessionKey, containerId: s.id, image: s.image })),
      sessionKeyOf: (token) => tool.sessionKeyOf(token),
      settingsProblems: () => settings.problems,
      artifactsRoot: store.root,
      treeSnapshot: () => {
        const walk = (node?: ArtifactNode): TreeSnapshot[] =>
          tree.getChildren(node).map((child) => {
            const item = tree.getTreeItem(child);
            const label = typeof item.label === 'string' ? item.label : (item.label?.label ?? '');
            return {
              label,
              ...(typeof item.description === 'string' ? { description: item.description } : {}),
              ...(item.resourceUri ? { resourceUri: item.resourceUri.toString() } : {}),
              children: walk(child),
            };
          });
        return walk();
      },
    };
  } catch (e) {
    // Shown to the user, then rethrown so VS Code marks the activation as failed.
    void vscode.window.showErrorMessage(`CodeAct Sandbox failed to start: ${describeError(e)}`);
    logger.error(`activation failed: ${describeError(e)}`);
    throw e;
  }
}

export async function deactivate(): Promise<void> {
  const p = provider;
  provider = undefined;
  await p?.dispose();
}
