import * as assert from 'node:assert/strict';
import { DEFAULTS } from '../../src/core/limits';
import { SETTING_KEYS, readSettings, settingsShape } from '../../src/core/settings';
import { RESTRICTED_SETTINGS } from '../../src/core/trust';
import { COMMAND, CONFIG_SECTION, TOOL_NAME } from '../../src/vscode/ids';
import { manifest, manifestKeys, manifestStrings } from './manifest';

type Property = { default: unknown; minimum?: number; maximum?: number; type: string; order?: number; scope?: string };
/** The settings are grouped (a category per concern, as the Settings editor shows them): all of them, merged. */
const categories: { title: string; order: number; properties: Record<string, Property> }[] = manifest.contributes.configuration;
const properties: Record<string, Property> = Object.assign({}, ...categories.map((c) => c.properties));

describe('settings (unit)', () => {
  it("the manifest's words for people are in package.nls.json: each key named there, and none left over", () => {
    const keys = manifestKeys();
    assert.deepEqual([...new Set(keys)].sort(), Object.keys(manifestStrings).sort());
    assert.deepEqual(keys.filter((k) => typeof manifestStrings[k] !== 'string'), []);
  });

  it('package.json declares every setting, with the zod defaults and bounds', () => {
    assert.deepEqual(Object.keys(properties).sort(), SETTING_KEYS.map((k) => `${CONFIG_SECTION}.${k}`).sort());
    for (const key of SETTING_KEYS) {
      const p = properties[`${CONFIG_SECTION}.${key}`]!;
      assert.deepEqual(p.default, DEFAULTS[key], key);
      const schema = settingsShape[key] as unknown as { minValue?: number | null; maxValue?: number | null };
      if (p.type === 'integer' || p.type === 'number') {
        assert.equal(p.minimum, schema.minValue, `${key} minimum`);
        assert.equal(p.maximum, schema.maxValue, `${key} maximum`);
      }
    }
  });

  it('groups the settings a person looks for, in order, with the engine addresses per machine', () => {
    assert.deepEqual(
      categories.map((c) => [c.order, c.title]),
      [[1, 'Image and packages'], [2, 'Limits'], [3, 'Files'], [4, 'Network'], [5, 'State'], [6, 'Engine'], [7, 'Advanced']],
    );
    for (const c of categories) assert.deepEqual(Object.values(c.properties).map((p) => p.order), Object.keys(c.properties).map((_, i) => i + 1), c.title);
    const perMachine = Object.entries(properties).filter(([, p]) => p.scope === 'machine-overridable').map(([k]) => k);
    assert.deepEqual(perMachine, ['codeactSandbox.dockerHost', 'codeactSandbox.dockerContext', 'codeactSandbox.dockerCertPath', 'codeactSandbox.dockerTlsVerify']);
  });

  it('the ids in code are the ids in package.json', () => {
    assert.equal(manifest.contributes.languageModelTools[0].name, TOOL_NAME);
    const commands = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual(commands, Object.values(COMMAND).sort());
  });

  it('package.json restricts exactly the settings the code treats as restricted in untrusted workspaces', () => {
    assert.deepEqual(
      [...manifest.capabilities.untrustedWorkspaces.restrictedConfigurations].sort(),
      RESTRICTED_SETTINGS.map((k) => `${CONFIG_SECTION}.${k}`).sort(),
    );
    for (const k of RESTRICTED_SETTINGS) assert.ok((SETTING_KEYS as readonly string[]).includes(k), k);
  });

  it('unset values take defaults without complaint', () => {
    const { settings, problems } = readSettings(() => undefined);
    // maxOutputMb is a fixed ceiling, not a setting.
    const settingDefaults: Record<string, unknown> = { ...DEFAULTS };
    delete settingDefaults.maxOutputMb;
    assert.deepEqual(settings, settingDefaults);
    assert.deepEqual(problems, []);
  });

  it('a Docker context name follows the docker CLI rule; empty means none', () => {
    const read = (dockerContext: string) => readSettings((k) => (k === 'dockerContext' ? dockerContext : undefined));
    assert.deepEqual([read('colima').settings.dockerContext, read(' desktop-linux ').settings.dockerContext, read('').settings.dockerContext], ['colima', 'desktop-linux', '']);
    assert.deepEqual(read('../x').problems, [
      'codeactSandbox.dockerContext = "../x" is not valid (must be a Docker context name, as `docker context ls` lists it); using the default (empty).',
    ]);
  });

  it('an invalid value is reported and replaced by its default, the rest kept', () => {
    const values: Record<string, unknown> = { timeoutSeconds: -5, image: 'my image', memoryMb: 2048, pythonPackages: ['polars', '--index-url=http://x'] };
    const { settings, problems } = readSettings((k) => values[k]);
    assert.equal(settings.timeoutSeconds, DEFAULTS.timeoutSeconds);
    assert.equal(settings.image, DEFAULTS.image);
    assert.equal(settings.memoryMb, 2048);
    assert.deepEqual(settings.pythonPackages, []);
    assert.equal(problems.length, 3);
    assert.equal(problems[0], 'codeactSandbox.image = "my image" is not valid (must be an image reference without spaces); using the default (empty).');
    assert.equal(
      problems[1],
      'codeactSandbox.pythonPackages = ["polars","--index-url=http://x"] is not valid (each entry must be a pip requirement: a package name, optionally with a version ("requests==2.32.3")); using [].',
    );
    assert.match(problems[2]!, /^codeactSandbox\.timeoutSeconds = -5 is not valid \(.+\); using 120\.$/);
  });
});
