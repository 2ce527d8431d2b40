import * as assert from 'node:assert/strict';
import { RequirementListError, normalizeProjectName, normalizeRequirements, requirementName } from '../../src/core/requirements';

describe('pip requirement strings (unit)', () => {
  it('accepts names, extras, versions, markers and direct URLs', () => {
    const ok: [string, string][] = [
      ['requests', 'requests'],
      ['polars==1.9.0', 'polars'],
      ['  scikit_learn >= 1.2, <2 ', 'scikit_learn'],
      ['pandas[excel,performance]~=2.2', 'pandas'],
      ['tomli; python_version < "3.11"', 'tomli'],
      ['pkg @ https://example.invalid/pkg-1.0-py3-none-any.whl', 'pkg'],
      ['zope.interface===5.5.2', 'zope.interface'],
    ];
    for (const [req, name] of ok) assert.equal(requirementName(req), name, req);
  });

  it('refuses options, files, line breaks and things that are not requirements', () => {
    for (const bad of ['', ' ', '--index-url http://x', '-r requirements.txt', '-e .', 'a\nb', 'a\u0000', 'two words', '==1.0', 'pkg ==', 'x'.repeat(501), 'pkg --hash=sha256:00']) {
      assert.equal(requirementName(bad), undefined, JSON.stringify(bad));
    }
  });

  it('normalises the list: trimmed, no duplicates, sorted; names the first bad entry', () => {
    assert.deepEqual(normalizeRequirements([' polars ', 'attrs', 'polars']), ['attrs', 'polars']);
    assert.throws(() => normalizeRequirements(['ok', '--pre', 'x y']), (e: unknown) => e instanceof RequirementListError && e.entry === '--pre');
    assert.equal(normalizeProjectName('Scikit_Learn.x'), 'scikit-learn-x');
  });
});
