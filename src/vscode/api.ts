import type { ArtifactStore } from '../storage/artifactStore';
import type { ArtifactNode, ArtifactTreeProvider } from './artifactTree';
import type { ExecuteCodeTool } from './executeCodeTool';
import type { SettingsReader } from './config';
import type { SandboxService } from './sandboxService';
import type { Ui } from './ui';
import type { WindowPlace } from './windowPlace';

/** What the extension hands to other extensions and to its own tests (activate's return value). */
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
  /** The engine's state as the view and the status item show it (undefined before the first check). */
  engineState(): string | undefined;
  /**
   * Answers the window's own questions (a dialog: another chat's state coming in) instead of the
   * person: VS Code refuses dialogs in extension tests. The answerer sees each question's exact text.
   */
  answerQuestions(answer: ((question: string) => boolean) | undefined): void;
  /**
   * Answers the credential commands' input boxes and quick picks instead of the person (a test
   * cannot type into them): the answerer sees each one's title (and a pick's labels) and gives the
   * text typed, or the label chosen; undefined dismisses it.
   */
  answerPrompts(answer: PromptAnswerer | undefined): void;
  /** What the status item shows now. */
  statusItem(): { text: string; tooltip: string } | undefined;
  /** Where this window's extension runs against its workspace (windowPlace.ts). */
  windowPlace(): WindowPlace;
}

export type PromptAnswerer = (prompt: { title: string; labels?: string[] }) => string | undefined;

export interface TreeSnapshot {
  label: string;
  description?: string;
  resourceUri?: string;
  children: TreeSnapshot[];
}

export function codeactApi(parts: {
  sandboxes: SandboxService;
  tool: ExecuteCodeTool;
  settings: SettingsReader;
  store: ArtifactStore;
  tree: ArtifactTreeProvider;
  answerQuestions: CodeactApi['answerQuestions'];
  answerPrompts: CodeactApi['answerPrompts'];
}): CodeactApi {
  const { sandboxes, tool, settings, store, tree } = parts;
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
  return {
    sandboxes: () => [...sandboxes.active.entries()].map(([sessionKey, s]) => ({ sessionKey, containerId: s.id, image: s.image })),
    sessionKeyOf: (token) => tool.sessionKeyOf(token),
    settingsProblems: () => settings.problems,
    artifactsRoot: store.root,
    backend: () => sandboxes.describe(),
    engineState: () => sandboxes.engineState.state,
    statusItem: () => sandboxes.statusShown,
    windowPlace: () => sandboxes.place,
    treeNodes: (parent) => tree.getChildren(parent),
    treeSnapshot: () => walk(),
    answerQuestions: parts.answerQuestions,
    answerPrompts: parts.answerPrompts,
  };
}

/**
 * `ui` whose input boxes and quick picks the test API's answerer answers while one is set (an
 * answer its box would refuse is a dismissal, as the box never takes it).
 */
export function answeredBy<U extends Pick<Ui, 'askText' | 'pick'>>(ui: U, answerer: () => PromptAnswerer | undefined): U {
  return {
    ...ui,
    askText: async (question) => {
      const answer = answerer();
      if (!answer) return ui.askText(question);
      const text = answer({ title: question.title });
      return text === undefined || question.check?.(text) ? undefined : text;
    },
    pick: async (items, options) => {
      const answer = answerer();
      if (!answer) return ui.pick(items, options);
      const label = answer({ title: options.title, labels: items.map((i) => i.label) });
      return items.find((i) => i.label === label);
    },
  };
}
