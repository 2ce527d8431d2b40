// Bundles the extension and the CLI into one file each. `vscode` is provided by the host.
// dockerode's optional native modules stay out: cpu-features (used by ssh2 only to pick
// ciphers) and ssh2's sshcrypto.node both have pure-JS fallbacks, and a .node file cannot be
// bundled nor shipped for every platform. The bundle is then smoke-tested (node dist/cli.js --help
// and a require() of dist/extension.js with a stub `vscode`) by scripts/smoke-bundle.mjs.
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

const pkg = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url), 'utf8'));

// The runner starts as one `python3 -c SOURCE` argument, and Linux refuses any single argument
// over 131,072 bytes (MAX_ARG_STRLEN): past that, every sandbox would fail to start. The build
// stops well before it, while there is still room to move code out.
const RUNNER_MAX_BYTES = 120_000;
const runnerSource = fs.readFileSync(new URL('./resources/runner.py', import.meta.url), 'utf8');
if (Buffer.byteLength(runnerSource, 'utf8') > RUNNER_MAX_BYTES) {
  console.error(
    `resources/runner.py is ${Buffer.byteLength(runnerSource, 'utf8')} bytes, over the ${RUNNER_MAX_BYTES} this build allows: it is passed ` +
      'to python3 as one argument, which Linux refuses over 131,072 bytes. Make it smaller before building.',
  );
  process.exit(1);
}
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
  // jsonc-parser's main entry is a UMD wrapper whose require() calls esbuild cannot follow, so the
  // bundle would fail at load with "Cannot find module './impl/format'"; its ESM build bundles
  // cleanly (https://github.com/microsoft/node-jsonc-parser/issues/57).
  alias: { 'jsonc-parser': 'jsonc-parser/lib/esm/main.js' },
  define: {
    __CODEACT_VERSION__: JSON.stringify(pkg.version),
    // The sandbox's warm runner (Python) travels inside the bundle; src/docker/container/runnerProgram.ts reads
    // resources/runner.py itself when run from the sources.
    __CODEACT_RUNNER_SOURCE__: JSON.stringify(runnerSource),
  },
};

const builds = [
  { ...common, entryPoints: ['src/vscode/extension.ts'], outfile: 'dist/extension.js' },
  { ...common, entryPoints: ['src/cli.ts'], outfile: 'dist/cli.js', },
];

// The Dev Container backend runs the Dev Containers CLI (@devcontainers/cli) as a child process.
// Its npm package ships a prebuilt single-file bundle with no dependencies; node_modules are not
// in the .vsix, so that bundle is copied next to ours, in the package's own layout (the CLI finds
// its scripts/ two levels above its script), with its licence notices.
function copyDevcontainersCli() {
  const from = path.dirname(require.resolve('@devcontainers/cli/package.json'));
  const to = 'dist/devcontainers-cli';
  fs.rmSync(to, { recursive: true, force: true });
  for (const file of ['dist/spec-node/devContainersSpecCLI.js', 'scripts/updateUID.Dockerfile', 'package.json', 'LICENSE.txt', 'ThirdPartyNotices.txt']) {
    const src = path.join(from, file);
    if (!fs.existsSync(src)) {
      if (file.endsWith('.js')) throw new Error(`@devcontainers/cli lacks ${file}: its layout changed, update esbuild.mjs`);
      continue;
    }
    fs.mkdirSync(path.dirname(path.join(to, file)), { recursive: true });
    fs.copyFileSync(src, path.join(to, file));
  }
}

if (watch) {
  copyDevcontainersCli();
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  fs.chmodSync('dist/cli.js', 0o755);
  copyDevcontainersCli();
}
