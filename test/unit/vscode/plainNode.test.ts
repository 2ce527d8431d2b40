import * as assert from 'node:assert/strict';
import { createRequire } from 'node:module';

/**
 * The logic of the adapter takes VS Code's effects as parameters (src/vscode/ui.ts), so it loads
 * where there is no `vscode` module at all; only the glue files (extension, vscodeUi, the tree
 * view, the tool, the log, the workspace files) need the real one.
 */
describe('src/vscode logic in plain Node (unit)', () => {
  // Loaded at run time on purpose: a static import would not show what a module pulls in.
  const load = createRequire(__filename);

  it('there is no vscode module here', () => {
    assert.throws(() => load('vscode'), /Cannot find module 'vscode'/);
  });

  it('the logic modules load without it', () => {
    for (const name of ['artifactItems', 'config', 'ids', 'credentials', 'invocationText', 'prepareCall', 'sandboxDecision', 'sandboxService', 'status', 'ui']) {
      assert.doesNotThrow(() => load(`../../../src/vscode/${name}`), name);
    }
  });

  it('a glue module does need it', () => {
    assert.throws(() => load('../../../src/vscode/vscodeUi'), /Cannot find module 'vscode'/);
  });
});
