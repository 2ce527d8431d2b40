// The .vsix must hold the bundle, media and docs, and none of the sources or tests.
import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';

const vsix = process.argv[2] ?? 'dist/codeact-sandbox.vsix';
// A .vsix is a zip; Python's zipfile lists it without needing unzip on the machine.
const names = execFileSync('python3', ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))', vsix], {
  encoding: 'utf8',
})
  .trim()
  .split('\n');
const files = names.filter((n) => n.startsWith('extension/')).map((n) => n.slice('extension/'.length));
for (const required of ['package.json', 'package.nls.json', 'dist/extension.js', 'dist/cli.js', 'dist/cli-commands.mjs', 'dist/devcontainers-cli/dist/spec-node/devContainersSpecCLI.js', 'media/icon.png', 'readme.md', 'changelog.md', 'LICENSE.txt']) {
  assert.ok(files.some((f) => f.toLowerCase() === required.toLowerCase()), `${vsix} lacks ${required}: ${files.join(', ')}`);
}
// The pages the README links to ship beside it (the Troubleshooting button opens one): each of them.
const docs = execFileSync('ls', ['docs'], { encoding: 'utf8' }).trim().split('\n').filter((f) => f.endsWith('.md'));
assert.ok(docs.includes('troubleshooting.md'), 'docs/troubleshooting.md is missing from the checkout');
for (const doc of docs) assert.ok(files.includes(`docs/${doc}`), `${vsix} lacks docs/${doc}`);
// The chunks the commands load are there, each of them.
const chunks = execFileSync('ls', ['dist/cli-chunks'], { encoding: 'utf8' }).trim().split('\n').filter((f) => f.endsWith('.mjs'));
for (const chunk of chunks) assert.ok(files.includes(`dist/cli-chunks/${chunk}`), `${vsix} lacks dist/cli-chunks/${chunk}`);
const forbidden = files.filter((f) => /^(src|test|scripts|node_modules|\.ci)\//.test(f) || f.endsWith('.map') || f.endsWith('.ts'));
assert.deepEqual(forbidden, [], `${vsix} must not contain sources or tests`);
console.log(`${vsix}: ${files.length} files, bundle/media/docs (${docs.length} pages) present, no sources or tests`);
