import * as assert from 'node:assert/strict';
import { RESTRICTED_SETTINGS, isExplicit, settingValue } from '../../src/core/trust';

describe('workspace trust and restricted settings (unit)', () => {
  const image = { defaultValue: 'python:3.12-slim', globalValue: 'mine:1', workspaceValue: 'evil:latest', workspaceFolderValue: undefined };

  it('a trusted workspace chooses the image, the engine and the backend', () => {
    assert.equal(settingValue('image', image, true), 'evil:latest');
    assert.equal(settingValue('dockerHost', { defaultValue: '', workspaceValue: 'tcp://10.1.2.3:2375' }, true), 'tcp://10.1.2.3:2375');
  });

  it('an untrusted workspace cannot point the sandbox at another image, engine, backend or weaken the deny-list', () => {
    assert.equal(settingValue('image', image, false), 'mine:1');
    assert.equal(settingValue('image', { defaultValue: 'python:3.12-slim', workspaceFolderValue: 'evil:1' }, false), 'python:3.12-slim');
    assert.equal(settingValue('dockerHost', { defaultValue: '', workspaceValue: 'tcp://10.1.2.3:2375' }, false), '');
    assert.equal(settingValue('backend', { defaultValue: 'auto', workspaceValue: 'devcontainer' }, false), 'auto');
    assert.deepEqual(settingValue('denyGlobs', { defaultValue: ['.env'], workspaceValue: [] }, false), ['.env']);
    assert.equal(isExplicit('dockerTlsVerify', { defaultValue: false, workspaceValue: false }, false), false);
    assert.equal(isExplicit('dockerTlsVerify', { defaultValue: false, globalValue: false }, false), true);
  });

  it('settings that are not restricted keep their workspace value either way', () => {
    assert.equal(settingValue('timeoutSeconds', { defaultValue: 120, workspaceValue: 30 }, false), 30);
    assert.ok(!(RESTRICTED_SETTINGS as readonly string[]).includes('timeoutSeconds'));
  });
});
