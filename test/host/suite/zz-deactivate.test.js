// Runs last: after deactivation the extension no longer serves calls.
const assert = require('node:assert/strict');
const path = require('node:path');
const vscode = require('vscode');
const h = require('./helpers');

describe('deactivation (host)', function () {
  it('removes every container the window created', async function () {
    await h.activate();
    assert.equal(await h.run('print("last call")'), 'stdout:\nlast call');
    assert.ok(h.ownContainers().length >= 1, 'a sandbox exists before deactivation');
    // The same module instance the host loaded: deactivate() is what VS Code calls on shutdown or reload.
    const main = require(path.join(vscode.extensions.getExtension(h.EXTENSION_ID).extensionPath, 'dist', 'extension.js'));
    await main.deactivate();
    assert.deepEqual(h.ownContainers(), []);
  });
});
