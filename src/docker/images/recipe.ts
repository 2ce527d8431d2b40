/**
 * What the default sandbox image holds: one list, each package with both of its names, so the
 * two routes that build it cannot drift apart. The pip route installs exactly the pinned
 * versions; the Debian route installs the same packages as Debian bookworm ships them (older
 * versions, one tested set). A unit test pins the list; the build itself proves the Debian name
 * of every entry provides its pip distribution and that its module imports.
 */

export interface DataPackage {
  /** The distribution's name on PyPI, as importlib.metadata reports it (PEP 503-normalised when compared). */
  name: string;
  /** The exact version the pip route installs. */
  version: string;
  /** Debian bookworm's package that provides the same distribution. */
  debian: string;
  /** A module the build imports to prove the package works (the import name, e.g. sklearn). */
  module: string;
}

export interface DataRecipe {
  packages: readonly DataPackage[];
}

/** `name==version`, the pip route's requirement for a package. */
export function pipRequirement(p: DataPackage): string {
  return `${p.name}==${p.version}`;
}

/**
 * The stack a data analyst reaches for first, and the file formats their data comes in. What is
 * not here and why: pyarrow (Parquet) has no bookworm package, so it cannot be in both routes;
 * requests and friends would be useless without a network; plotting to HTML (plotly) needs a
 * browser to look at. Users add such packages with the pythonPackages setting.
 */
export const DATA_PACKAGES: readonly DataPackage[] = [
  // Arrays, tables, statistics, models.
  { name: 'numpy', version: '2.2.4', debian: 'python3-numpy', module: 'numpy' },
  { name: 'pandas', version: '2.2.3', debian: 'python3-pandas', module: 'pandas' },
  { name: 'scipy', version: '1.15.2', debian: 'python3-scipy', module: 'scipy' },
  { name: 'statsmodels', version: '0.14.4', debian: 'python3-statsmodels', module: 'statsmodels.api' },
  { name: 'scikit-learn', version: '1.6.1', debian: 'python3-sklearn', module: 'sklearn' },
  { name: 'sympy', version: '1.13.3', debian: 'python3-sympy', module: 'sympy' },
  { name: 'networkx', version: '3.4.2', debian: 'python3-networkx', module: 'networkx' },
  // Charts and images.
  { name: 'matplotlib', version: '3.10.1', debian: 'python3-matplotlib', module: 'matplotlib.pyplot' },
  { name: 'seaborn', version: '0.13.2', debian: 'python3-seaborn', module: 'seaborn' },
  { name: 'pillow', version: '11.1.0', debian: 'python3-pil', module: 'PIL.Image' },
  // Spreadsheets: .xlsx (read and write), .xls, .ods.
  { name: 'openpyxl', version: '3.1.5', debian: 'python3-openpyxl', module: 'openpyxl' },
  { name: 'xlrd', version: '2.0.1', debian: 'python3-xlrd', module: 'xlrd' },
  { name: 'odfpy', version: '1.4.1', debian: 'python3-odf', module: 'odf.opendocument' },
  // HTML, XML, YAML, and what pandas needs to render tables (to_markdown, Styler, to_latex).
  { name: 'lxml', version: '5.3.1', debian: 'python3-lxml', module: 'lxml.etree' },
  { name: 'beautifulsoup4', version: '4.13.3', debian: 'python3-bs4', module: 'bs4' },
  { name: 'PyYAML', version: '6.0.2', debian: 'python3-yaml', module: 'yaml' },
  { name: 'tabulate', version: '0.9.0', debian: 'python3-tabulate', module: 'tabulate' },
  { name: 'Jinja2', version: '3.1.6', debian: 'python3-jinja2', module: 'jinja2' },
  // Progress bars for long loops (printed to stderr, which the model sees).
  { name: 'tqdm', version: '4.67.1', debian: 'python3-tqdm', module: 'tqdm' },
];

export const DATA_RECIPE: DataRecipe = { packages: DATA_PACKAGES };

/** The two ways to build the image, in the order they are tried. */
export const ROUTE_NAMES = ['pip', 'debian'] as const;
export type RouteName = (typeof ROUTE_NAMES)[number];

export interface RouteInfo {
  /** The image the build starts FROM (pulled when missing and a registry answers). */
  base: string;
  /** One phrase for the log: what the route installs with. */
  installs: string;
}

/**
 * Both bases are Debian bookworm, so the system libraries are the same; Python is 3.12 on the pip
 * route (the official image's) and 3.11 on the Debian route (bookworm's).
 */
export const ROUTES: Record<RouteName, RouteInfo> = {
  pip: { base: 'python:3.12-slim-bookworm', installs: 'pip, the pinned versions' },
  debian: { base: 'debian:bookworm-slim', installs: "apt, Debian bookworm's python3-* packages" },
};

/**
 * Debian-route packages that are not part of the stack itself: python3, and pip so packages the
 * user adds can be layered on top (the official Python image has pip already), with the CA
 * certificates Debian's pip verifies an HTTPS index against.
 */
export const DEBIAN_SYSTEM_PACKAGES: readonly string[] = ['python3', 'python3-pip', 'ca-certificates'];
