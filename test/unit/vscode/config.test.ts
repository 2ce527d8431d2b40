import * as assert from 'node:assert/strict';
import { DEFAULTS } from '../../../src/core/limits';
import { SettingsReader } from '../../../src/vscode/config';
import { FakeUi, FakeWorkspace, recordingLogger } from './fakes';

describe('settings reader (unit)', () => {
  let ui: FakeUi;
  let workspace: FakeWorkspace;
  let log: ReturnType<typeof recordingLogger>;
  let reader: SettingsReader;

  beforeEach(() => {
    ui = new FakeUi();
    workspace = new FakeWorkspace();
    log = recordingLogger();
    reader = new SettingsReader(log, workspace, ui);
  });

  it('reads the values in force at every read, defaults for the rest', () => {
    assert.equal(reader.read().timeoutSeconds, DEFAULTS.timeoutSeconds);
    workspace.user.timeoutSeconds = 30;
    assert.equal(reader.read().timeoutSeconds, 30);
    workspace.workspace.timeoutSeconds = 5;
    assert.equal(reader.read().timeoutSeconds, 5);
    assert.deepEqual(ui.shown, []);
  });

  it("an untrusted workspace keeps the user's restricted settings, and its own unrestricted ones", () => {
    workspace.user.image = 'mine:1';
    workspace.workspace.image = 'theirs:1';
    workspace.workspace.dockerHost = 'tcp://198.51.100.7:2375';
    workspace.workspace.timeoutSeconds = 3;
    assert.equal(reader.read().image, 'theirs:1');
    workspace.trusted = false;
    const s = reader.read();
    assert.deepEqual([s.image, s.dockerHost, s.timeoutSeconds], ['mine:1', '', 3]);
  });

  it('reports an invalid value once, in the log and as a warning, and uses the default', () => {
    workspace.user.timeoutSeconds = 'soon';
    const problem = 'codeactSandbox.timeoutSeconds = "soon" is not valid (Invalid input: expected number, received string); using 120.';
    assert.equal(reader.read().timeoutSeconds, 120);
    assert.equal(reader.read().timeoutSeconds, 120);
    // With a button that opens the setting it names.
    assert.deepEqual(ui.shown, [`warning: CodeAct Sandbox: ${problem} [Open Setting -> workbench.action.openSettings codeactSandbox.timeoutSeconds]`]);
    assert.deepEqual(log.lines, [`warn: ${problem}`]);
    assert.deepEqual(reader.problems, [problem]);
  });

  it('tells an explicit setting from a default, by the same trust rules', () => {
    assert.equal(reader.isExplicit('dockerTlsVerify'), false);
    workspace.workspace.dockerTlsVerify = false;
    assert.equal(reader.isExplicit('dockerTlsVerify'), true);
    workspace.trusted = false;
    assert.equal(reader.isExplicit('dockerTlsVerify'), false);
    workspace.user.dockerTlsVerify = true;
    assert.equal(reader.isExplicit('dockerTlsVerify'), true);
  });
});
