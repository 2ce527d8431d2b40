import * as assert from 'node:assert/strict';
import { missingModuleHint, missingModuleName, type InstalledDistribution } from '../../src/core/missingModule';

const TRACEBACK = (name: string) => `Traceback (most recent call last):\n  File "/sandbox/runs/0001-abcdef/program.py", line 1, in <module>\n    import ${name}\nModuleNotFoundError: No module named '${name}'\n`;

const DISTS: InstalledDistribution[] = [
  { name: 'numpy', version: '1.24.2', modules: ['numpy'], requested: true },
  { name: 'pandas', version: '1.5.3', modules: ['pandas'], requested: true },
  { name: 'python-dateutil', version: '2.8.2', modules: ['dateutil'], requested: false },
  { name: 'scikit-learn', version: '1.2.1', modules: ['sklearn'], requested: true },
];

describe('the ModuleNotFoundError hint (unit)', () => {
  it('names the module, what is installed (requested first) and the setting, with the pip name', () => {
    assert.equal(
      missingModuleHint(TRACEBACK('cv2'), { distributions: DISTS, packagesSetting: 'codeactSandbox.pythonPackages' }),
      "The sandbox has no module named 'cv2', and it has no network, so pip install cannot work there. Installed packages include numpy 1.24.2, pandas 1.5.3, scikit-learn 1.2.1 and 1 more. If the program needs cv2, ask the user to add \"opencv-python-headless\" to the codeactSandbox.pythonPackages setting.",
    );
    assert.equal(
      missingModuleHint(TRACEBACK('polars.io'), { distributions: DISTS.slice(0, 2), packagesSetting: '--packages' }),
      "The sandbox has no module named 'polars.io', and it has no network, so pip install cannot work there. Installed packages include numpy 1.24.2 and pandas 1.5.3. If the program needs polars, ask the user to add \"polars\" to the --packages setting.",
    );
  });

  it('without labels or a way to add packages, says less and asks for another image', () => {
    assert.equal(
      missingModuleHint(TRACEBACK('polars'), {}),
      "The sandbox has no module named 'polars', and it has no network, so pip install cannot work there. If the program needs polars, ask the user for a sandbox image that has it.",
    );
    assert.equal(
      missingModuleHint(TRACEBACK('polars'), { distributions: [DISTS[2]!] }),
      "The sandbox has no module named 'polars', and it has no network, so pip install cannot work there. Installed packages include python-dateutil 2.8.2. If the program needs polars, ask the user for a sandbox image that has it.",
    );
  });

  it('a missing submodule of an installed package names the version that is there', () => {
    assert.equal(
      missingModuleHint(TRACEBACK('sklearn.externals.joblib'), { distributions: DISTS, packagesSetting: 'codeactSandbox.pythonPackages' }),
      "The sandbox has scikit-learn 1.2.1, which provides sklearn but no module named 'sklearn.externals.joblib'; that module may belong to another version of scikit-learn. Use what version 1.2.1 offers.",
    );
    // Installed yet not importable: the traceback explains better than a hint.
    assert.equal(missingModuleHint(TRACEBACK('pandas'), { distributions: DISTS }), undefined);
  });

  it('takes the last missing module and ignores other errors', () => {
    assert.equal(missingModuleName(`${TRACEBACK('a')}During handling...\n${TRACEBACK('b')}`), 'b');
    assert.equal(missingModuleName("ImportError: cannot import name 'x' from 'y'\n"), undefined);
    assert.equal(missingModuleHint('ValueError: boom\n', { distributions: DISTS }), undefined);
    assert.equal(missingModuleName("ModuleNotFoundError: No module named 'a b'\n"), undefined);
  });
});
