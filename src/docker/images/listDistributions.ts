/**
 * The program each image build runs last, inside the image: it lists the Python distributions
 * the image really has (importlib.metadata, not our list), with the top-level modules each
 * provides, and writes them as JSON for the host to put into the image's labels. It also fails
 * the build when a requested distribution is missing or a module does not import, so a broken
 * image is never tagged.
 *
 *   python3 list-distributions.py SPEC.json OUT.json
 *   SPEC: {"requested": ["pandas", ...], "modules": ["pandas", "sklearn", ...]}
 */

/** Where the program and its output live inside the image. */
export const LISTING_DIR = '/usr/share/codeact-sandbox';
export const LISTING_SCRIPT = `${LISTING_DIR}/list-distributions.py`;
export const LISTING_OUTPUT = `${LISTING_DIR}/distributions.json`;

export interface ListingSpec {
  /** Distributions that must be there (the recipe's, the user's); marked `requested` in the output. */
  requested: string[];
  /** Modules that must import. */
  modules: string[];
}

export const LIST_DISTRIBUTIONS_PY = `import importlib, importlib.metadata as md, importlib.util, json, re, sys

def norm(name):
    return re.sub(r'[-_.]+', '-', name).lower()

spec = json.load(open(sys.argv[1]))
found = {}
for d in md.distributions():
    name = d.metadata['Name']
    if name and norm(name) not in found:
        found[norm(name)] = (name, d.version)
def importable(module):
    try:
        return importlib.util.find_spec(module) is not None
    except Exception:
        return False

# Only names that import (some packagings list stray ones, such as "src"); a distribution whose
# metadata names none (no top_level.txt, no RECORD) gets its own name when that imports.
modules = {}
for module, names in md.packages_distributions().items():
    if module.isidentifier() and not module.startswith('_') and importable(module):
        for n in names:
            modules.setdefault(norm(n), set()).add(module)
for k, (name, _) in found.items():
    guess = k.replace('-', '_')
    if k not in modules and guess.isidentifier() and importable(guess):
        modules[k] = {guess}
problems = ['%s is not installed' % r for r in spec['requested'] if norm(r) not in found]
for m in spec['modules']:
    try:
        importlib.import_module(m)
    except Exception as e:
        problems.append('import %s failed: %s: %s' % (m, type(e).__name__, e))
if problems:
    sys.exit('codeact-sandbox: the image is not usable: ' + '; '.join(problems))
requested = {norm(r) for r in spec['requested']}
out = [{'name': n, 'version': v, 'modules': sorted(modules.get(k, ())), 'requested': k in requested} for k, (n, v) in sorted(found.items())]
with open(sys.argv[2], 'w') as f:
    json.dump(out, f, separators=(',', ':'))
print('codeact-sandbox: %d distributions, %d requested, all %d modules import' % (len(out), len(requested), len(spec['modules'])))
`;
