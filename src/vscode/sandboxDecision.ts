/**
 * Which image the next sandbox runs, decided from plain facts and returned as a value: the
 * service (sandboxService.ts) gathers the facts, then carries out the decision in one place.
 * Nothing here asks, builds, pulls or reads anything.
 */
import type { ToolErrorCode } from '../core/errors';
import type { BackendChoice, BackendSetting } from '../docker/backend';
import { CONFIG_SECTION } from './ids';

export interface SandboxFacts {
  /** The backend setting and the configured image in force. */
  setting: BackendSetting;
  configuredImage: string;
  /** What `chooseBackend` made of the setting and the workspace. */
  choice: BackendChoice;
  trusted: boolean;
  /** The user's stored answer to "build the image from the Dev Container configuration?"; undefined until asked. */
  approval: boolean | undefined;
  /** The Dev Container image and whether the engine has it; looked up only when `needsDevcontainerImage` says so. */
  devcontainerImage?: { tag: string; present: boolean };
}

export type SandboxDecision =
  /** The configured image (the docker backend, or auto falling back to it). */
  | { kind: 'configured'; choice: BackendChoice; image: string }
  /** The Dev Container image, already on the engine. */
  | { kind: 'present'; choice: BackendChoice; image: string }
  /** Ask the user before the first build; then `decideAfterAnswer`. */
  | { kind: 'ask'; choice: BackendChoice; configFile: string; tag: string }
  | { kind: 'build'; choice: BackendChoice; tag: string }
  /** Fail the call with this sentence for the model. */
  | { kind: 'refuse'; code: ToolErrorCode; message: string };

/** The buttons of the build question; the answer is stored as `approval`. */
export const BUILD_ANSWER = { build: 'Build Image', decline: 'Use the Docker Image' } as const;

/** Building runs the workspace's Dockerfile with network access: the user says yes once. */
export function buildQuestion(configFile: string): string {
  return `CodeAct Sandbox: build the sandbox image from ${configFile}? The build runs this workspace's Dockerfile with network access; programs then run in it without network, as usual.`;
}

/** Whether the decision needs the Dev Container image's tag and presence (an image inspect). */
export function needsDevcontainerImage(facts: Omit<SandboxFacts, 'devcontainerImage'>): boolean {
  return facts.choice.backend === 'devcontainer' && facts.trusted && !declinedAuto(facts);
}

export function decideSandbox(facts: SandboxFacts): SandboxDecision {
  const { choice } = facts;
  if (choice.backend === 'docker') return { kind: 'configured', choice, image: facts.configuredImage };
  const configFile = choice.configFile ?? 'the Dev Container configuration';
  // chooseBackend already keeps an untrusted workspace off this backend; never build for one regardless.
  if (!facts.trusted) {
    if (facts.setting === 'auto') {
      return { kind: 'configured', choice: { backend: 'docker', reason: `docker: auto, and the workspace is not trusted, so its ${configFile} is not built` }, image: facts.configuredImage };
    }
    return {
      kind: 'refuse',
      code: 'invalid_settings',
      message: `The sandbox is set to build the workspace's Dev Container, but the workspace is not trusted, so nothing from it is built. Ask the user to trust the workspace, or to set the ${CONFIG_SECTION}.backend setting to docker.`,
    };
  }
  if (declinedAuto(facts)) return declined(facts, configFile);
  const image = facts.devcontainerImage;
  if (!image) throw new Error('decideSandbox: the Dev Container image was not looked up');
  if (image.present) return { kind: 'present', choice, image: image.tag };
  if (facts.approval === true) return { kind: 'build', choice, tag: image.tag };
  // With the backend set to devcontainer, an earlier "no" is asked again: the setting says build.
  return { kind: 'ask', choice, configFile, tag: image.tag };
}

/** After the user answered the build question. */
export function decideAfterAnswer(facts: SandboxFacts, ask: Extract<SandboxDecision, { kind: 'ask' }>, approved: boolean): SandboxDecision {
  if (approved) return { kind: 'build', choice: ask.choice, tag: ask.tag };
  if (facts.setting === 'auto') return declined(facts, ask.configFile);
  return {
    kind: 'refuse',
    code: 'cancelled',
    message: `The user chose not to build the workspace's Dev Container image. Ask the user to set the ${CONFIG_SECTION}.backend setting to docker or auto, or to run "CodeAct Sandbox: Rebuild Dev Container Image".`,
  };
}

/**
 * The image a sandbox may be created from ahead of the first call, or undefined: pre-warming
 * never asks, builds or pulls, and runs a Dev Container image only once the user approved it.
 */
export function prewarmImage(decision: SandboxDecision, facts: SandboxFacts): string | undefined {
  if (decision.kind === 'configured') return decision.image;
  if (decision.kind === 'present' && facts.approval === true) return decision.image;
  return undefined;
}

function declinedAuto(facts: Pick<SandboxFacts, 'setting' | 'approval'>): boolean {
  return facts.setting === 'auto' && facts.approval === false;
}

function declined(facts: SandboxFacts, configFile: string): SandboxDecision {
  return { kind: 'configured', choice: { backend: 'docker', reason: `docker: auto, and the user chose not to build ${configFile}` }, image: facts.configuredImage };
}
