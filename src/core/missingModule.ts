/**
 * The hint a result gets when its program died of `ModuleNotFoundError`: the model's reflex is
 * `pip install`, which cannot work in a sandbox without network. It is told what the image has
 * (read from the image, not a static list) and how the user can add what is missing.
 */

/** One Python distribution an image has, as its build listed it (importlib.metadata). */
export interface InstalledDistribution {
  name: string;
  version: string;
  /** Top-level modules it provides ("sklearn" for scikit-learn). */
  modules: readonly string[];
  /** Asked for by the image's recipe or the user (not only pulled in as a dependency). */
  requested: boolean;
}

export interface MissingModuleContext {
  /** What the sandbox image has; undefined when unknown (an image we did not build). */
  distributions?: readonly InstalledDistribution[];
  /**
   * The setting that adds packages to this image ("codeactSandbox.pythonPackages", "--packages");
   * undefined when packages cannot be added to it (an image the user chose, a Dev Container).
   */
  packagesSetting?: string;
}

/** Most distributions named in a hint; the rest are counted. */
const MAX_LISTED = 30;

/**
 * Import names whose pip package is called something else, for the packages people ask for most.
 * Only used for modules the image does not have, so it cannot contradict the image.
 */
const PIP_NAMES: Readonly<Record<string, string>> = {
  cv2: 'opencv-python-headless',
  PIL: 'pillow',
  sklearn: 'scikit-learn',
  skimage: 'scikit-image',
  yaml: 'PyYAML',
  bs4: 'beautifulsoup4',
  dateutil: 'python-dateutil',
  docx: 'python-docx',
  pptx: 'python-pptx',
  fitz: 'PyMuPDF',
  Crypto: 'pycryptodome',
  dotenv: 'python-dotenv',
  jwt: 'PyJWT',
  OpenSSL: 'pyOpenSSL',
  serial: 'pyserial',
};

/** The module of the last `ModuleNotFoundError: No module named '...'` in stderr, if any. */
export function missingModuleName(stderr: string): string | undefined {
  let name: string | undefined;
  for (const m of stderr.matchAll(/ModuleNotFoundError: No module named '([A-Za-z_][A-Za-z0-9_.]*)'/g)) name = m[1];
  return name;
}

/**
 * The hint for a program whose stderr shows a missing module, or undefined when it shows none.
 * Exact text, because it is what the model reads:
 *
 *   The sandbox has no module named 'cv2', and it has no network, so pip install cannot work there.
 *   Installed packages include numpy 1.24.2, pandas 1.5.3 and 80 more. If the program needs cv2,
 *   ask the user to add "opencv-python-headless" to the codeactSandbox.pythonPackages setting.
 *
 * When the module's top-level package is installed (a submodule another version has), the hint
 * says which version is there instead.
 */
export function missingModuleHint(stderr: string, context: MissingModuleContext): string | undefined {
  const name = missingModuleName(stderr);
  if (!name) return undefined;
  const top = name.split('.')[0]!;
  const dists = context.distributions;
  const owner = dists?.find((d) => d.modules.includes(top));
  if (owner) {
    if (top === name) return undefined; // installed, yet not importable: the traceback says why
    return `The sandbox has ${owner.name} ${owner.version}, which provides ${top} but no module named '${name}'; that module may belong to another version of ${owner.name}. Use what version ${owner.version} offers.`;
  }
  const parts = [`The sandbox has no module named '${name}', and it has no network, so pip install cannot work there.`];
  if (dists && dists.length) parts.push(`Installed packages include ${listed(dists)}.`);
  const pipName = PIP_NAMES[top] ?? top;
  parts.push(
    context.packagesSetting
      ? `If the program needs ${top}, ask the user to add "${pipName}" to the ${context.packagesSetting} setting.`
      : `If the program needs ${top}, ask the user for a sandbox image that has it.`,
  );
  return parts.join(' ');
}

/** "a 1, b 2 and 80 more": the requested distributions first (all, when none is marked). */
function listed(dists: readonly InstalledDistribution[]): string {
  const requested = dists.filter((d) => d.requested);
  const shown = (requested.length ? requested : dists).slice(0, MAX_LISTED);
  const names = shown.map((d) => `${d.name} ${d.version}`);
  const rest = dists.length - shown.length;
  if (rest > 0) return `${names.join(', ')} and ${rest} more`;
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}` : names[0]!;
}
