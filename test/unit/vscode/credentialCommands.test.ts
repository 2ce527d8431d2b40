import * as assert from 'node:assert/strict';
import { readSettings } from '../../../src/core/settings';
import { CredentialVault, credentialCommands, type SecretStore } from '../../../src/vscode/credentials';
import { FakeState, FakeUi, FakeWorkspace, recordingLogger } from './fakes';

const VALUE = 'sk-live-0123456789abcdef';

/** SecretStorage as a map (what the keychain holds). */
class FakeSecrets implements SecretStore {
  readonly values = new Map<string, string>();
  async get(key: string): Promise<string | undefined> {
    return this.values.get(key);
  }
  async store(key: string, value: string): Promise<void> {
    this.values.set(key, value);
  }
  async delete(key: string): Promise<void> {
    this.values.delete(key);
  }
}

/** The commands over fakes: the user settings the UI writes are the ones the workspace reads back. */
function commandsWith(allow: string[]) {
  const ui = new FakeUi();
  const workspace = new FakeWorkspace();
  const secrets = new FakeSecrets();
  const state = new FakeState();
  const vault = new CredentialVault(secrets, state);
  const log = recordingLogger();
  ui.updateUserSetting = async (key, value) => {
    const next = value(workspace.user[key.replace('codeactSandbox.', '')]);
    ui.calls.push(`user setting: ${key} = ${JSON.stringify(next)}`);
    workspace.user[key.replace('codeactSandbox.', '')] = next;
  };
  const settings = () => readSettings((k) => (k === 'network.allow' ? allow : workspace.user[k])).settings;
  const commands = credentialCommands({ vault, ui, workspace, settings, log });
  return { ui, workspace, secrets, vault, log, commands };
}

describe('the credential commands (unit)', () => {
  it('adds one: the value to secret storage alone, the binding to the user settings, and says so without the value', async () => {
    const t = commandsWith(['api.example.com']);
    t.ui.textAnswers.push('example', VALUE, 'api.example.com', 'X-Api-Key');
    t.ui.pickAnswers.push('A header of its own (such as X-Api-Key)');
    await t.commands['codeactSandbox.addCredential']();
    assert.deepEqual([...t.secrets.values], [['codeactSandbox.credential.example', VALUE]]);
    assert.deepEqual(t.workspace.user.credentials, [{ secret: 'example', hosts: ['api.example.com'], as: 'header', name: 'X-Api-Key' }]);
    assert.deepEqual(t.vault.names(), ['example']);
    assert.deepEqual(t.ui.calls, [
      'askText: CodeAct Sandbox: Add Credential (1/4)',
      'askText: CodeAct Sandbox: Add Credential (2/4) (hidden)',
      'askText: CodeAct Sandbox: Add Credential (3/4)',
      'pick: CodeAct Sandbox: Add Credential (4/4) [Authorization: Bearer <secret> | Authorization: Basic (the secret is user:password) | A header of its own (such as X-Api-Key) | A query parameter (such as ?key=...)]',
      "askText: CodeAct Sandbox: Add Credential: the header's name",
      'user setting: codeactSandbox.credentials = [{"secret":"example","hosts":["api.example.com"],"as":"header","name":"X-Api-Key"}]',
      'info: CodeAct Sandbox: example is added for api.example.com from the next call on.',
    ]);
    assert.deepEqual(t.log.lines, ['info: credential example stored and bound to api.example.com (its paths and methods can be narrowed in the user settings)']);
  });

  it('says at once when the allow-list does not let programs reach the hosts, with the setting to open', async () => {
    /** What Add Credential shows last, for a bearer credential on api.example.com under `allow`. */
    const lastShown = async (allow: string[]) => {
      const t = commandsWith(allow);
      t.ui.textAnswers.push('example', VALUE, 'api.example.com');
      t.ui.pickAnswers.push('Authorization: Bearer <secret>');
      await t.commands['codeactSandbox.addCredential']();
      return t.ui.calls.at(-1);
    };
    assert.equal(
      await lastShown([]),
      'warning: CodeAct Sandbox: example is stored. codeactSandbox.credentials binds secrets, but codeactSandbox.network.allow lets programs reach no host; the bindings are ignored. Allow its hosts there to have it sent. [Open Setting -> workbench.action.openSettings codeactSandbox.network.allow]',
    );
    assert.equal(
      await lastShown(['other.example.org']),
      'warning: CodeAct Sandbox: example is stored. The credential binding for the secret example names api.example.com, which codeactSandbox.network.allow does not let programs reach (or a deny entry cuts into); the binding is ignored. Allow its hosts there to have it sent. [Open Setting -> workbench.action.openSettings codeactSandbox.network.allow]',
    );
  });

  it('stores nothing when a step is dismissed or an answer is refused', async () => {
    const t = commandsWith(['api.example.com']);
    t.ui.textAnswers.push('example', `${VALUE}\nX-Other: 1`);
    await t.commands['codeactSandbox.addCredential']();
    t.ui.textAnswers.push('../etc');
    await t.commands['codeactSandbox.addCredential']();
    t.ui.textAnswers.push('example', VALUE, 'api.example.com');
    await t.commands['codeactSandbox.addCredential']();
    assert.deepEqual(t.ui.calls, [
      'askText: CodeAct Sandbox: Add Credential (1/4)',
      'askText: CodeAct Sandbox: Add Credential (2/4) (hidden) refused: The value has a line break or another control character',
      'askText: CodeAct Sandbox: Add Credential (1/4) refused: Letters, digits, ".", "_" and "-", starting with a letter or digit',
      'askText: CodeAct Sandbox: Add Credential (1/4)',
      'askText: CodeAct Sandbox: Add Credential (2/4) (hidden)',
      'askText: CodeAct Sandbox: Add Credential (3/4)',
      'pick: CodeAct Sandbox: Add Credential (4/4) [Authorization: Bearer <secret> | Authorization: Basic (the secret is user:password) | A header of its own (such as X-Api-Key) | A query parameter (such as ?key=...)]',
    ]);
    assert.equal(t.secrets.values.size, 0);
    assert.equal(t.workspace.user.credentials, undefined);
    assert.equal(t.vault.generation, 'none');
  });

  it('lists names and hosts only, and a binding whose value is missing', async () => {
    const t = commandsWith(['api.example.com']);
    await t.vault.store('example', VALUE);
    t.workspace.user.credentials = [
      { secret: 'example', hosts: ['api.example.com'] },
      { secret: 'gone', hosts: ['api.example.com'] },
    ];
    t.workspace.workspace.credentials = [{ secret: 'repo', hosts: ['attacker.example'] }];
    await t.commands['codeactSandbox.listCredentials']();
    assert.deepEqual(t.ui.calls, [
      'pick: CodeAct Sandbox credentials (names only) [example (sent to api.example.com) | gone (bound, but no value is stored)]',
    ]);
  });

  it('removes one: its value, its bindings, and a new generation so the next call has a new sandbox', async () => {
    const t = commandsWith(['api.example.com']);
    await t.vault.store('example', VALUE);
    await t.vault.store('kept', 'other-value');
    t.workspace.user.credentials = [
      { secret: 'example', hosts: ['api.example.com'] },
      { secret: 'kept', hosts: ['api.example.com'] },
    ];
    const before = t.vault.generation;
    t.ui.pickAnswers.push('example');
    await t.commands['codeactSandbox.removeCredential']();
    assert.deepEqual([...t.secrets.values.keys()], ['codeactSandbox.credential.kept']);
    assert.deepEqual(t.workspace.user.credentials, [{ secret: 'kept', hosts: ['api.example.com'] }]);
    assert.deepEqual(t.vault.names(), ['kept']);
    assert.notEqual(t.vault.generation, before);
    assert.equal(t.ui.calls.at(-1), 'info: CodeAct Sandbox: example is removed; the next call has neither its value nor its bindings.');
    assert.ok(!t.ui.calls.concat(t.log.lines).some((line) => line.includes(VALUE) || line.includes('other-value')));
  });
});
