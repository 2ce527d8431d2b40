/**
 * Which heavy imports of the data stack the warm runner may preload: it keeps a module only if
 * importing it is invisible to a program that does not import it, and starts over without it
 * otherwise. Pinned here for the data image, with the same programs through both paths.
 */
import * as assert from 'node:assert/strict';
import type { ExecuteReport } from '../../src/core/executeCode';
import type { Logger } from '../../src/core/logger';
import { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { testDataImage, type DataImageRun } from './fixtures/dataImage';
import { docker, log, owner, run, uniqueSessionKey, useDocker, warmSandbox } from './helpers';

const CANDIDATES = [
  'numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot', 'scipy', 'scipy.stats', 'sklearn', 'statsmodels.api', 'seaborn', 'sympy',
  'PIL.Image', 'openpyxl', 'lxml.etree', 'bs4', 'yaml', 'networkx', 'tqdm', 'tabulate', 'jinja2', 'odf.opendocument', 'xlrd',
];

/** What the runner said when it became ready: "preloaded a, b; ...; not preloaded, not transparent: c(reason)". */
function verdict(line: string): { preloaded: string[]; rejected: string[] } {
  const preloaded = /preloaded ([^;)]*)/.exec(line)?.[1]?.split(', ') ?? [];
  const rejected = /not transparent: ([^;]*)\)$/.exec(line)?.[1]?.split(', ') ?? [];
  return { preloaded, rejected };
}

const normalized = (r: ExecuteReport) => `${r.text.replace(/\/sandbox\/runs\/[0-9]{4}-[0-9a-f]{6}/g, '<run>')}\n[exit ${r.exitCode}]`;

describe('preloading the data stack (integration)', function () {
  this.timeout(300_000);
  useDocker();
  let made: DataImageRun;
  const ready: string[] = [];
  const watching: Logger = { ...log, info: (m) => (/: runner ready \(/.test(m) ? ready.push(m) : log.info(m)) };
  let warm: DockerSandboxProvider;
  let plain: DockerSandboxProvider;
  const warmKey = uniqueSessionKey('preload-warm');
  const plainKey = uniqueSessionKey('preload-plain');

  before(async function () {
    this.timeout(45 * 60_000);
    made = await testDataImage();
    const limits = { memoryMb: 1024, cpus: 1, pidsLimit: 256, workAreaMb: 128 };
    warm = new DockerSandboxProvider({ docker, owner, log: watching, idleMs: 0, imageSettingHint: 'x', spec: () => ({ image: made.image.tag, limits, preloadModules: CANDIDATES, preloadWhen: 'start' }) });
    plain = new DockerSandboxProvider({ docker, owner, log, idleMs: 0, imageSettingHint: 'x', spec: () => ({ image: made.image.tag, limits, warmRunner: false }) });
    // The warm runner imports the whole list and starts over for each it rejects: minutes on a slow machine.
    await Promise.all([warmSandbox(warm, warmKey, 10 * 60_000), run(plain, plainKey, 'pass')]);
  });

  after(async function () {
    await Promise.all([warm?.dispose(), plain?.dispose()]);
  });

  it('keeps the imports no program can notice and names the others with the reason', function () {
    if (made.image.route !== 'debian') this.skip(); // the verdict below is for Debian bookworm's packages
    assert.equal(ready.length, 1, 'the runner became ready once');
    assert.deepEqual(verdict(ready[0]!), {
      preloaded: ['numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot', 'scipy', 'sympy', 'PIL.Image', 'openpyxl', 'lxml.etree', 'bs4', 'yaml', 'networkx', 'tqdm', 'tabulate', 'jinja2', 'xlrd'],
      // pybind11 leaves a name in builtins (scipy.stats, seaborn); sklearn and statsmodels set KMP_* variables (OpenMP); odfpy puts its folder on sys.path.
      rejected: ['scipy.stats(builtins)', 'sklearn(environ)', 'statsmodels.api(environ)', 'seaborn(builtins)', 'odf.opendocument(path)'],
    });
  });

  const PROGRAMS: [string, string][] = [
    ['a program that imports none of them', 'import os, sys, builtins\nprint(sorted(os.environ), sys.path, len(dir(builtins)))'],
    ['numpy and pandas', 'import numpy as np, pandas as pd\ndf = pd.DataFrame({"a": np.arange(5) ** 2})\nprint(df.describe().to_string())'],
    ['a chart', 'import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2, 3])\nfig.savefig("c.png")\nprint(plt.get_backend(), fig.get_size_inches())'],
    ['scipy and sympy', 'import scipy.optimize as so, sympy as sp\nx = sp.symbols("x")\nprint(round(so.brentq(lambda v: v**2 - 2, 0, 2), 9), sp.factor(x**2 - 1))'],
    ['the rejected ones, imported by the program', 'import os, sklearn, seaborn\nprint(os.environ.get("KMP_INIT_AT_FORK"), sklearn.__name__, seaborn.__name__)'],
    ['file formats', 'import io, openpyxl, yaml, bs4, lxml.etree, PIL.Image, tabulate, jinja2\nwb = openpyxl.Workbook()\nwb.active["A1"] = 3\nb = io.BytesIO()\nwb.save(b)\nprint(openpyxl.load_workbook(b).active["A1"].value, yaml.safe_load("a: [1, 2]"), bs4.BeautifulSoup("<p>hi</p>", "lxml").p.text)'],
    ['an exception inside pandas', 'import pandas as pd\npd.DataFrame({"a": [1]})["b"]'],
  ];
  for (const [name, code] of PROGRAMS) {
    it(`gives the result of docker exec: ${name}`, async function () {
      const [w, p] = await Promise.all([run(warm, warmKey, code, { limits: { timeoutMs: 60_000 } }), run(plain, plainKey, code, { limits: { timeoutMs: 60_000 } })]);
      assert.equal(normalized(w), normalized(p));
    });
  }
});
