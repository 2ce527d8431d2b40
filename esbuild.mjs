// Bundles the extension and the CLI into one file each. `vscode` is provided by the host.
// dockerode's optional native modules stay out: cpu-features (used by ssh2 only to pick
// ciphers) and ssh2's sshcrypto.node both have pure-JS fallbacks, and a .node file cannot be
// bundled nor shipped for every platform. The bundle is then smoke-tested (node dist/cli.js --help
// and a require() of dist/extension.js with a stub `vscode`) by scripts/smoke-bundle.mjs.
import * as esbuild from 'esbuild';
import fs from 'node:fs';

const pkg = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const watch = process.argv.includes('--watch');

/** @type {import('esbuild').BuildOptions} */
const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  minify: !watch,
  logLevel: 'warning',
  external: ['vscode', 'cpu-features', '*.node'],
  define: { __CODEACT_VERSION__: JSON.stringify(pkg.version) },
};

const builds = [
  { ...common, entryPoints: ['src/vscode/extension.ts'], outfile: 'dist/extension.js' },
  { ...common, entryPoints: ['src/cli.ts'], outfile: 'dist/cli.js', },
];

if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  fs.chmodSync('dist/cli.js', 0o755);
}
