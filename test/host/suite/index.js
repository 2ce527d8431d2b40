// Loaded inside the extension host (extensionTestsPath): the @vscode/test-electron contract,
// a run() that resolves when mocha passes and rejects when it fails.
const path = require('node:path');
const Mocha = require('mocha');

exports.run = function run() {
  const mocha = new Mocha({ ui: 'bdd', timeout: 120_000, color: false, reporter: 'spec' });
  const only = process.env.CODEACT_HOST_SUITE; // e.g. "tool" or "agent" to run one file
  for (const file of ['tool.test.js', 'agent.test.js', 'zz-deactivate.test.js']) {
    if (!only || file.startsWith(only)) mocha.addFile(path.join(__dirname, file));
  }
  return new Promise((resolve, reject) => {
    mocha.run((failures) => (failures > 0 ? reject(new Error(`${failures} host test(s) failed`)) : resolve()));
  });
};
