/**
 * Which image the next sandbox runs, decided from plain facts and returned as a value: the
 * service (sandboxService.ts) gathers the facts, then carries out the decision in one place.
 * Nothing here asks, builds, pulls or reads anything.
 */
import type { ToolErrorCode } from '../core/errors';
import type { BackendChoice, BackendSetting } from '../docker';
import { CONFIG_SECTION } from './ids';

export interface SandboxFacts {
  /** The backend setting and the configured image in force. */
  setting: BackendSetting;
  configuredImage: string;
  /** What `chooseBackend` made of the setting and the workspace. */
  choice: BackendChoice;
  trusted: boolean;
  /** The user's stored answer to "build the image from the Dev Container configuration?"; undefined until they chose a button. */
  approval: boolean | undefined;
  /** The Dev Container image and whether the engine has it; looked up only when `needsDevcontainerImage` says so. */
  devcontainerImage?: { tag: string; present: boolean };
  /** codeactSandbox.pythonPackages in force (in an untrusted workspace, the user's own). */
  packages: readonly string[];
  /**
   * The user's answer to "install these packages?" for this very list: true once they chose
   * Install (kept for the workspace, and only for the list they saw), false after Not Now in this
   * window, undefined otherwise (never asked, the list changed, or the question was dismissed).
   */
  packagesApproval: boolean | undefined;
}

export type SandboxDecision =
  /** The configured image (the docker backend, or auto falling back to it); `note` is for the log. */
  | { kind: 'configured'; choice: BackendChoice; image: string; note?: string }
  /** The data image (found or built), with these packages layered on it (none: the data image itself). */
  | { kind: 'data'; choice: BackendChoice; requirements: readonly string[] }
  /** Ask the user before the first packages build of the workspace; then `decideAfterPackagesAnswer`. */
  | { kind: 'ask-packages'; choice: BackendChoice; requirements: readonly string[] }
  /** The Dev Container image, already on the engine. */
  | { kind: 'present'; choice: BackendChoice; image: string; note?: string }
  /** Ask the user before the first build; then `decideAfterAnswer`. */
  | { kind: 'ask'; choice: BackendChoice; configFile: string; tag: string }
  | { kind: 'build'; choice: BackendChoice; tag: string; note?: string }
  /** Fail the call with this sentence for the model. */
  | { kind: 'refuse'; code: ToolErrorCode; message: string };

/**
 * The buttons of the build question; a button chosen is stored as `approval`, a dismissed
 * question (Escape) is no answer: that call goes on without the build, and the next one asks.
 */
export const BUILD_ANSWER = { build: 'Build Image', decline: "Don't Build" } as const;

/** Building runs the workspace's Dockerfile with network access: the user says yes once. */
export function buildQuestion(configFile: string): string {
  return `CodeAct Sandbox: build the sandbox image from ${configFile}? The build runs this workspace's Dockerfile with network access; programs then run in it without network, as usual.`;
}

export const PACKAGES_SETTING = `${CONFIG_SECTION}.pythonPackages`;

/** The buttons of the packages question: Install is kept with the list it answered, Not Now for this window only. */
export const PACKAGES_ANSWER = { install: 'Install Packages', decline: 'Not Now' } as const;

/** The list an Install answered, as stored: the same requirements in any order are the same list. */
export function packagesKey(requirements: readonly string[]): string {
  return JSON.stringify([...requirements].map((r) => r.trim()).sort());
}

/** Installing runs pip with network access: the user says yes once per workspace. */
export function packagesQuestion(requirements: readonly string[]): string {
  return `CodeAct Sandbox: install ${requirements.join(', ')} (${PACKAGES_SETTING}) into the sandbox image? pip downloads them with network access during the build; programs then run without network, as usual.`;
}

/** Whether the decision needs the Dev Container image's tag and presence (an image inspect). */
export function needsDevcontainerImage(facts: Omit<SandboxFacts, 'devcontainerImage'>): boolean {
  return facts.choice.backend === 'devcontainer' && facts.trusted && !declinedAuto(facts);
}

export function decideSandbox(facts: SandboxFacts): SandboxDecision {
  const { choice } = facts;
  if (choice.backend === 'docker') return dockerImage(facts, choice);
  const configFile = choice.configFile ?? 'the Dev Container configuration';
  // chooseBackend already keeps an untrusted workspace off this backend; never build for one regardless.
  if (!facts.trusted) {
    if (facts.setting === 'auto') {
      return dockerImage(facts, { backend: 'docker', reason: `docker: auto, and the workspace is not trusted, so its ${configFile} is not built` });
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
  const note = ignoredPackages(facts, 'the Dev Container backend (its image is the workspace\'s own)');
  if (image.present) return { kind: 'present', choice, image: image.tag, ...note };
  if (facts.approval === true) return { kind: 'build', choice, tag: image.tag, ...note };
  // With the backend set to devcontainer, an earlier "no" is asked again: the setting says build.
  return { kind: 'ask', choice, configFile, tag: image.tag };
}

/** After the user answered the build question. */
export function decideAfterAnswer(facts: SandboxFacts, ask: Extract<SandboxDecision, { kind: 'ask' }>, approved: boolean): SandboxDecision {
  if (approved) return { kind: 'build', choice: ask.choice, tag: ask.tag, ...ignoredPackages(facts, 'the Dev Container backend (its image is the workspace\'s own)') };
  if (facts.setting === 'auto') return declined(facts, ask.configFile);
  return {
    kind: 'refuse',
    code: 'cancelled',
    message: `The user did not agree to build the workspace's Dev Container image, so the program was not run. Ask the user to set the ${CONFIG_SECTION}.backend setting to docker or auto, or to run "CodeAct Sandbox: Rebuild Dev Container Image".`,
  };
}

/** After the user answered the packages question. */
export function decideAfterPackagesAnswer(ask: Extract<SandboxDecision, { kind: 'ask-packages' }>, approved: boolean): SandboxDecision {
  if (approved) return { kind: 'data', choice: ask.choice, requirements: ask.requirements };
  return {
    kind: 'refuse',
    code: 'cancelled',
    message: `The user did not agree to install the packages of the ${PACKAGES_SETTING} setting now, so the program was not run. Ask the user to run "CodeAct Sandbox: Prepare Sandbox Image", which installs them, or to remove them from that setting.`,
  };
}

/** What a sandbox may be created from ahead of the first call: an image, the data image if it is already built, or nothing. */
export type PrewarmTarget = { image: string } | { dataImage: readonly string[] } | undefined;

/**
 * Pre-warming never asks, builds or pulls: it runs a Dev Container image only once the user
 * approved it, and the data image only once it is built (the caller checks that).
 */
export function prewarmImage(decision: SandboxDecision, facts: SandboxFacts): PrewarmTarget {
  if (decision.kind === 'configured') return { image: decision.image };
  if (decision.kind === 'present' && facts.approval === true) return { image: decision.image };
  if (decision.kind === 'data') return { dataImage: decision.requirements };
  return undefined;
}

/**
 * The docker backend's image: the one the user named, else the data image with their packages.
 * Packages cause a network-enabled build: never for an untrusted workspace, and asked once.
 */
function dockerImage(facts: SandboxFacts, choice: BackendChoice): SandboxDecision {
  if (facts.configuredImage) {
    return { kind: 'configured', choice, image: facts.configuredImage, ...ignoredPackages(facts, `an image the user chose (${CONFIG_SECTION}.image = ${facts.configuredImage})`) };
  }
  const requirements = facts.packages;
  if (!requirements.length || facts.packagesApproval === true) return { kind: 'data', choice, requirements };
  if (!facts.trusted) {
    return {
      kind: 'refuse',
      code: 'invalid_settings',
      message: `The ${PACKAGES_SETTING} setting asks for packages, but the workspace is not trusted, so nothing is installed with network access for it. Ask the user to trust the workspace, or to remove the packages from that setting.`,
    };
  }
  if (facts.packagesApproval === false) return decideAfterPackagesAnswer({ kind: 'ask-packages', choice, requirements }, false);
  return { kind: 'ask-packages', choice, requirements };
}

/** The log's sentence when the user's packages do not apply to the image in use. */
function ignoredPackages(facts: SandboxFacts, where: string): { note?: string } {
  return facts.packages.length ? { note: `${PACKAGES_SETTING} (${facts.packages.join(', ')}) does not apply to ${where}; it adds packages to the data image only` } : {};
}

function declinedAuto(facts: Pick<SandboxFacts, 'setting' | 'approval'>): boolean {
  return facts.setting === 'auto' && facts.approval === false;
}

function declined(facts: SandboxFacts, configFile: string): SandboxDecision {
  return dockerImage(facts, { backend: 'docker', reason: `docker: auto, and the user chose not to build ${configFile}` });
}
