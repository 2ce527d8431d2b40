/**
 * pip requirement strings from the user's settings (codeactSandbox.pythonPackages, --packages).
 * They become argv elements of pip inside an image build, so anything that is not a plain
 * requirement (an option such as `--index-url`, a `-r` file, a line break) is refused here,
 * before a build starts; whether the package exists is pip's to say.
 */

const NAME = '[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?';
const EXTRAS = `\\[\\s*(?:${NAME}(?:\\s*,\\s*${NAME})*)?\\s*\\]`;
const VERSION_ONE = '(?:~=|===|==|!=|<=|>=|<|>)\\s*[A-Za-z0-9.*+!_-]+';
const VERSIONS = `${VERSION_ONE}(?:\\s*,\\s*${VERSION_ONE})*`;
const URL = '@\\s*[A-Za-z][A-Za-z0-9+.-]*://\\S+';
/** PEP 508 without the rarely used parenthesised version form. */
const REQUIREMENT = new RegExp(`^(${NAME})\\s*(?:${EXTRAS})?\\s*(?:${VERSIONS}|${URL})?\\s*(?:;\\s*[^;]+)?$`);

export const MAX_REQUIREMENT_LENGTH = 500;

/** PEP 503's normal form of a project name: what pip compares. */
export function normalizeProjectName(name: string): string {
  return name.replace(/[-_.]+/g, '-').toLowerCase();
}

/** The project name of a valid requirement ("pandas" of "pandas[excel]>=2"), else undefined. */
export function requirementName(requirement: string): string | undefined {
  const text = requirement.trim();
  if (text.length > MAX_REQUIREMENT_LENGTH || /[\u0000-\u001f\u007f]/.test(text)) return undefined;
  return REQUIREMENT.exec(text)?.[1];
}

/**
 * The requirements to install, trimmed, without duplicates, in a stable order (the order does not
 * change what pip installs, so it must not change the image's hash). Throws RequirementListError
 * naming the first entry that is not a requirement.
 */
export function normalizeRequirements(requirements: readonly string[]): string[] {
  const out = new Set<string>();
  for (const raw of requirements) {
    const text = raw.trim();
    if (!requirementName(text)) throw new RequirementListError(raw);
    out.add(text);
  }
  return [...out].sort();
}

export class RequirementListError extends Error {
  constructor(readonly entry: string) {
    super(`${JSON.stringify(entry.slice(0, 100))} is not a pip requirement`);
    this.name = 'RequirementListError';
  }
}
