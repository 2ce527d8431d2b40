import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * scripts/test.sh runs each engine's suites in two parts: its stage (.mocharc.docker*.json) and,
 * with every core busy, the timing-sensitive ones (.mocharc.stress*.json). A suite in both would
 * run twice for one proof; a suite in neither would never run.
 */
describe('which stage runs each Docker suite (unit)', () => {
  const root = path.join(__dirname, '../..');
  const config = (name: string): { spec: string[]; ignore?: string[] } =>
    JSON.parse(fs.readFileSync(path.join(root, 'test', `.mocharc.${name}.json`), 'utf8'));
  const suites = fs
    .readdirSync(path.join(root, 'test/docker'))
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => `test/docker/${f}`)
    .sort();
  const sorted = (xs: string[]) => [...xs].sort();

  it('runc: the Docker stage runs every suite but the timing-sensitive ones, which run only under load', () => {
    const stage = config('docker');
    const timing = config('stress').spec;
    assert.deepEqual(stage.spec, ['test/docker/**/*.test.ts']);
    assert.deepEqual(sorted(stage.ignore ?? []), sorted(timing));
    assert.deepEqual(timing.filter((s) => !suites.includes(s)), []);
  });

  for (const engine of ['runsc', 'podman']) {
    it(`${engine}: its stage and its part under load share no suite, and both name only suites that exist`, () => {
      const stage = config(`docker-${engine}`).spec;
      const timing = config(`stress-${engine}`).spec;
      assert.deepEqual(stage.filter((s) => timing.includes(s)), []);
      assert.deepEqual([...stage, ...timing].filter((s) => !suites.includes(s)), []);
      // Only suites that are timing-sensitive under runc too are run under load on another engine.
      assert.deepEqual(timing.filter((s) => !config('stress').spec.includes(s)), []);
    });
  }
});
