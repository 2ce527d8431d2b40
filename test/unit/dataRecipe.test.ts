import { TOOL_DESCRIPTION } from '../../src/core/toolDescription';
import * as assert from 'node:assert/strict';
import { dataImageContext, derivedHash, derivedImageContext, recipeHash } from '../../src/docker/images/dockerfile';
import { planDataImage } from '../../src/docker/images/dataImage';
import { DATA_PACKAGES, DATA_RECIPE, DEBIAN_SYSTEM_PACKAGES, ROUTES, pipRequirement } from '../../src/docker/images/recipe';
import { ourImage, parseDistributions } from '../../src/docker/images/imageLabels';

describe('the data image recipe (unit)', () => {
  it("the tool's model description names every package of the stack (Pillow as the model knows it)", () => {
    const named = DATA_PACKAGES.map((p) => (p.name === 'pillow' ? 'Pillow' : p.name)).filter((name) => !TOOL_DESCRIPTION.includes(` ${name}`));
    assert.deepEqual(named, []);
  });

  it('pins the package list: pip requirement, Debian package and the module the build imports', () => {
    assert.deepEqual(
      DATA_PACKAGES.map((p) => [pipRequirement(p), p.debian, p.module]),
      [
        ['numpy==2.2.4', 'python3-numpy', 'numpy'],
        ['pandas==2.2.3', 'python3-pandas', 'pandas'],
        ['scipy==1.15.2', 'python3-scipy', 'scipy'],
        ['statsmodels==0.14.4', 'python3-statsmodels', 'statsmodels.api'],
        ['scikit-learn==1.6.1', 'python3-sklearn', 'sklearn'],
        ['sympy==1.13.3', 'python3-sympy', 'sympy'],
        ['networkx==3.4.2', 'python3-networkx', 'networkx'],
        ['matplotlib==3.10.1', 'python3-matplotlib', 'matplotlib.pyplot'],
        ['seaborn==0.13.2', 'python3-seaborn', 'seaborn'],
        ['pillow==11.1.0', 'python3-pil', 'PIL.Image'],
        ['openpyxl==3.1.5', 'python3-openpyxl', 'openpyxl'],
        ['xlrd==2.0.1', 'python3-xlrd', 'xlrd'],
        ['odfpy==1.4.1', 'python3-odf', 'odf.opendocument'],
        ['lxml==5.3.1', 'python3-lxml', 'lxml.etree'],
        ['beautifulsoup4==4.13.3', 'python3-bs4', 'bs4'],
        ['PyYAML==6.0.2', 'python3-yaml', 'yaml'],
        ['tabulate==0.9.0', 'python3-tabulate', 'tabulate'],
        ['Jinja2==3.1.6', 'python3-jinja2', 'jinja2'],
        ['tqdm==4.67.1', 'python3-tqdm', 'tqdm'],
      ],
    );
    assert.deepEqual(DEBIAN_SYSTEM_PACKAGES, ['python3', 'python3-pip', 'ca-certificates']);
    assert.deepEqual(ROUTES, {
      pip: { base: 'python:3.12-slim-bookworm', installs: 'pip, the pinned versions' },
      debian: { base: 'debian:bookworm-slim', installs: "apt, Debian bookworm's python3-* packages" },
    });
  });

  it('has no package twice under either name', () => {
    for (const key of ['name', 'debian', 'module'] as const) {
      const names = DATA_PACKAGES.map((p) => p[key].toLowerCase());
      assert.equal(new Set(names).size, names.length, key);
    }
  });

  const listing = [
    'COPY list-distributions.py listing.json /usr/share/codeact-sandbox/',
    'RUN MPLCONFIGDIR=/tmp/codeact-mpl PYTHONDONTWRITEBYTECODE=1 python3 /usr/share/codeact-sandbox/list-distributions.py /usr/share/codeact-sandbox/listing.json /usr/share/codeact-sandbox/distributions.json \\',
    ' && rm -rf /tmp/codeact-mpl',
  ];
  const tiny = { packages: [DATA_PACKAGES[1]!, DATA_PACKAGES[16]!] };

  it('writes the Debian route: apt, no recommends, lists cleaned, then the listing step', () => {
    const ctx = dataImageContext('debian', tiny);
    assert.equal(
      ctx.dockerfile,
      [
        "# CodeAct Sandbox data image, debian route (apt, Debian bookworm's python3-* packages). Generated; its hash is the tag.",
        'FROM debian:bookworm-slim',
        'ENV LANG=C.UTF-8',
        'RUN apt-get update \\',
        ' && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 \\',
        '      python3 \\',
        '      python3-pip \\',
        '      ca-certificates \\',
        '      python3-pandas \\',
        '      python3-tabulate \\',
        ' && apt-get clean \\',
        ' && rm -rf /var/lib/apt/lists/*',
        ...listing,
        'CMD ["python3"]',
        '',
      ].join('\n'),
    );
    assert.deepEqual(JSON.parse(ctx.files['listing.json']!), { requested: ['pandas', 'tabulate'], modules: ['pandas', 'tabulate'] });
    assert.match(ctx.files['list-distributions.py']!, /importlib\.metadata/);
  });

  it('writes the pip route: the official Python image, pinned versions', () => {
    assert.equal(
      dataImageContext('pip', tiny).dockerfile,
      [
        '# CodeAct Sandbox data image, pip route (pip, the pinned versions). Generated; its hash is the tag.',
        'FROM python:3.12-slim-bookworm',
        'ENV LANG=C.UTF-8',
        'RUN python3 -m pip install --no-cache-dir --disable-pip-version-check --no-input --progress-bar off --root-user-action ignore --prefer-binary \\',
        '      pandas==2.2.3 \\',
        '      tabulate==0.9.0',
        ...listing,
        'CMD ["python3"]',
        '',
      ].join('\n'),
    );
  });

  it('tags by a hash of the recipe that includes the route', () => {
    const [pip, debian] = planDataImage({ recipe: tiny, repository: 'r' });
    assert.equal(pip!.route, 'pip');
    assert.equal(debian!.route, 'debian');
    assert.equal(pip!.tag, `r:pip-${pip!.hash.slice(0, 16)}`);
    assert.equal(debian!.tag, `r:debian-${debian!.hash.slice(0, 16)}`);
    assert.notEqual(pip!.hash, debian!.hash);
    // Stable for the same recipe, different for another.
    assert.equal(recipeHash('debian', dataImageContext('debian', tiny)), debian!.hash);
    assert.notEqual(recipeHash('debian', dataImageContext('debian', DATA_RECIPE)), debian!.hash);
    assert.match(planDataImage()[0]!.tag, /^codeact-sandbox\/data:pip-[0-9a-f]{16}$/);
  });

  it('layers user packages with exec-form pip, options ended before the requirements', () => {
    const ctx = derivedImageContext({ base: 'img:1', route: 'debian', requirements: ['a==1', 'b'], requested: ['pandas', 'a', 'b'], indexUrl: 'http://127.0.0.1:9/simple' });
    assert.equal(
      ctx.dockerfile.split('\n').slice(1, 3).join('\n'),
      'FROM img:1\nRUN ["python3","-m","pip","install","--no-cache-dir","--disable-pip-version-check","--no-input","--progress-bar","off","--root-user-action","ignore","--prefer-binary","--break-system-packages","--index-url","http://127.0.0.1:9/simple","--","a==1","b"]',
    );
    const pip = derivedImageContext({ base: 'img:1', route: 'pip', requirements: ['a'], requested: ['a'] });
    assert.ok(!pip.dockerfile.includes('--break-system-packages') && !pip.dockerfile.includes('--index-url'), pip.dockerfile);
    assert.deepEqual(JSON.parse(ctx.files['listing.json']!), { requested: ['pandas', 'a', 'b'], modules: [] });
    assert.equal(derivedHash('sha256:1', ['a', 'b']), derivedHash('sha256:1', ['a', 'b']));
    assert.notEqual(derivedHash('sha256:1', ['a', 'b']), derivedHash('sha256:2', ['a', 'b']));
    assert.notEqual(derivedHash('sha256:1', ['a', 'b']), derivedHash('sha256:1', ['a']));
  });

  it('reads the labels of our images tolerantly, and ignores images that are not ours', () => {
    const dists = [{ name: 'pandas', version: '1.5.3', modules: ['pandas'], requested: true }];
    const labels = {
      'dev.codeact-sandbox.managed': '1',
      'dev.codeact-sandbox.image.kind': 'data',
      'dev.codeact-sandbox.image.hash': 'abc',
      'dev.codeact-sandbox.image.route': 'debian',
      'dev.codeact-sandbox.image.distributions': JSON.stringify([{ ...dists[0], modules: 'odd' }]),
    };
    assert.deepEqual(ourImage({ Id: 'sha256:1', Config: { Labels: labels } as never }), {
      id: 'sha256:1',
      kind: 'data',
      hash: 'abc',
      route: 'debian',
      distributions: [{ name: 'pandas', version: '1.5.3', modules: [], requested: true }],
    });
    assert.equal(ourImage({ Id: 'x', Config: { Labels: { ...labels, 'dev.codeact-sandbox.image.route': 'conda' } } as never }), undefined);
    assert.equal(ourImage({ Id: 'x', Config: { Labels: {} } as never }), undefined);
    assert.equal(parseDistributions('not json'), undefined);
    assert.deepEqual(parseDistributions(JSON.stringify(dists)), dists);
  });
});
