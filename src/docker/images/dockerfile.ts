/**
 * The build contexts of our images, generated from the recipe: a Dockerfile and the files it
 * copies. Nothing here talks to an engine, so the text is unit-tested as it is.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { LISTING_DIR, LISTING_OUTPUT, LISTING_SCRIPT, LIST_DISTRIBUTIONS_PY, type ListingSpec } from './listDistributions';
import { DEBIAN_SYSTEM_PACKAGES, ROUTES, pipRequirement, type DataRecipe, type RouteName } from './recipe';

export interface BuildContext {
  dockerfile: string;
  /** Files next to the Dockerfile, by name. */
  files: Readonly<Record<string, string>>;
}

/** Bump to rebuild every image of ours (when how we build changes in a way the text does not show). */
const HASH_SCHEMA = 'codeact-sandbox image 1';
const SPEC_FILE = 'listing.json';

/** pip's flags for every install: quiet about itself, no cache left in a layer, no prompts. */
const PIP_FLAGS = ['--no-cache-dir', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', '--root-user-action', 'ignore'];

function listingFiles(spec: ListingSpec): Record<string, string> {
  return { 'list-distributions.py': LIST_DISTRIBUTIONS_PY, [SPEC_FILE]: `${JSON.stringify(spec)}\n` };
}

/**
 * The last steps of every build: copy the listing program in, and run it. matplotlib's cache is
 * kept out of the image (the sandbox has its own), and so are byte-code files of the check.
 */
function listingSteps(): string[] {
  return [
    `COPY list-distributions.py ${SPEC_FILE} ${LISTING_DIR}/`,
    `RUN MPLCONFIGDIR=/tmp/codeact-mpl PYTHONDONTWRITEBYTECODE=1 python3 ${LISTING_SCRIPT} ${LISTING_DIR}/${SPEC_FILE} ${LISTING_OUTPUT} \\`,
    ' && rm -rf /tmp/codeact-mpl',
  ];
}

/** The data image's context for one route; both routes install the same list. */
export function dataImageContext(route: RouteName, recipe: DataRecipe): BuildContext {
  const spec: ListingSpec = { requested: recipe.packages.map((p) => p.name), modules: recipe.packages.map((p) => p.module) };
  const install =
    route === 'debian'
      ? [
          'RUN apt-get update \\',
          ' && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 \\',
          ...[...DEBIAN_SYSTEM_PACKAGES, ...recipe.packages.map((p) => p.debian)].map((p) => `      ${p} \\`),
          ' && apt-get clean \\',
          ' && rm -rf /var/lib/apt/lists/*',
        ]
      : [
          `RUN python3 -m pip install ${PIP_FLAGS.join(' ')} --prefer-binary \\`,
          ...recipe.packages.map((p, i) => `      ${pipRequirement(p)}${i < recipe.packages.length - 1 ? ' \\' : ''}`),
        ];
  const dockerfile = [
    `# CodeAct Sandbox data image, ${route} route (${ROUTES[route].installs}). Generated; its hash is the tag.`,
    `FROM ${ROUTES[route].base}`,
    'ENV LANG=C.UTF-8',
    ...install,
    ...listingSteps(),
    'CMD ["python3"]',
    '',
  ].join('\n');
  return { dockerfile, files: listingFiles(spec) };
}

export interface DerivedContextOptions {
  /** The data image to build on (its tag). */
  base: string;
  /** The route the base was built by: Debian's pip must be told that it may install beside apt. */
  route: RouteName;
  /** Checked pip requirement strings (see core/requirements). */
  requirements: readonly string[];
  /** Distributions that must be there afterwards: the base's requested ones and the user's. */
  requested: readonly string[];
  indexUrl?: string;
}

/**
 * The user's packages on top of a data image. Requirements are argv elements of an exec-form
 * RUN (JSON), never shell words, and `--` ends pip's options before them. On the Debian route pip
 * needs --break-system-packages (PEP 668): it installs into /usr/local, beside apt's files, and
 * nothing in the image runs apt again, which is what that guard protects.
 */
export function derivedImageContext(o: DerivedContextOptions): BuildContext {
  const pip = [
    'python3', '-m', 'pip', 'install', ...PIP_FLAGS, '--prefer-binary',
    ...(o.route === 'debian' ? ['--break-system-packages'] : []),
    ...(o.indexUrl ? ['--index-url', o.indexUrl] : []),
    '--', ...o.requirements,
  ];
  const dockerfile = [
    `# CodeAct Sandbox data image with the user's packages. Generated.`,
    `FROM ${o.base}`,
    `RUN ${JSON.stringify(pip)}`,
    ...listingSteps(),
    '',
  ].join('\n');
  return { dockerfile, files: listingFiles({ requested: [...o.requested], modules: [] }) };
}

/** sha256 (hex) of a data image's recipe: the route and everything its build reads. */
export function recipeHash(route: RouteName, context: BuildContext): string {
  const h = createHash('sha256').update(`${HASH_SCHEMA}\0data\0${route}\0${context.dockerfile}`);
  for (const name of Object.keys(context.files).sort()) h.update(`\0${name}\0${context.files[name]}`);
  return h.digest('hex');
}

/** sha256 (hex) of (base image id, requirements): what a derived image is. */
export function derivedHash(baseImageId: string, requirements: readonly string[]): string {
  return createHash('sha256').update(`${HASH_SCHEMA}\0packages\0${baseImageId}\0${requirements.join('\n')}`).digest('hex');
}

/** The context as the tar stream the engine's build endpoint takes. */
export function contextArchive(context: BuildContext): Readable {
  const p = pack();
  const mtime = new Date(0);
  const entries: [string, string][] = [['Dockerfile', context.dockerfile], ...Object.entries(context.files)];
  for (const [name, text] of entries) {
    const content = Buffer.from(text, 'utf8');
    p.entry({ name, mode: 0o644, uid: 0, gid: 0, mtime, size: content.length }, content);
  }
  p.finalize();
  return p as unknown as Readable;
}
