// Loaded inside the extension host (extensionTestsPath): the @vscode/test-electron contract,
// a run() that resolves when mocha passes and rejects when it fails.
const path = require('node:path');
const Mocha = require('mocha');

exports.run = function run() {
  const mocha = new Mocha({ ui: 'bdd', timeout: 120_000, color: false, reporter: 'spec' });
  // CODEACT_HOST_SUITE picks files by prefix ("engine", "tool", "agent", "card"); the engine suite goes first, while the view is empty; the untrusted suite needs a
  // workspace in Restricted Mode and runs only when asked for.
  const only = process.env.CODEACT_HOST_SUITE;
  const files = only === 'untrusted' ? ['untrusted.test.js', 'zz-deactivate.test.js'] : ['engine.test.js', 'tool.test.js', 'agent.test.js', 'card.test.js', 'zz-deactivate.test.js'];
  for (const file of files) {
    if (!only || only === 'untrusted' || file.startsWith(only)) mocha.addFile(path.join(__dirname, file));
  }
  return new Promise((resolve, reject) => {
    mocha.run((failures) => (failures > 0 ? reject(new Error(`${failures} host test(s) failed`)) : resolve()));
  });
};
