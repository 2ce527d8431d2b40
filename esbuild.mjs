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

// The sandbox runner is kept as parts (resources/runner/NN_name.py, in the order of their
// numbers) and ships as one source, joined here: each part is compiled under its own file name, so
// a traceback names the part and its line, and all run in one namespace, so nothing is imported
// to join them (sys.modules stays what the runner's checks expect). The last part is the start,
// placed at the joined source's own top level: the program runs in that frame. The result is
// written to dist/runner.py, which the tests and the sources (tsx) read: they run what ships.
const RUNNER_DIR = 'resources/runner';
const RUNNER_PART = /^\d\d_[a-z0-9_]+\.py$/;
// The runner starts as one `python3 -c SOURCE` argument, and Linux refuses any single argument
// over 131,072 bytes (MAX_ARG_STRLEN): past that, every sandbox would fail to start. The build
// stops well before it, while there is still room to move code out.
const RUNNER_MAX_BYTES = 120_000;

function joinRunner() {
  const names = fs.readdirSync(RUNNER_DIR).filter((name) => RUNNER_PART.test(name)).sort();
  const parts = names.map((name) => ({ file: `${RUNNER_DIR}/${name}`, text: fs.readFileSync(path.join(RUNNER_DIR, name), 'utf8') }));
  for (const { file, text } of parts) {
    // Each part travels as a raw triple-quoted string, which holds any text but these.
    if (text.includes("'''") || !text.endsWith('\n')) fail(`${file} must end with a newline and may not hold three single quotes in a row (it travels as r'''...''')`);
  }
  for (const part of parts) part.text = shippedPart(part.text);
  const start = parts.pop();
  return [
    `# The CodeAct Sandbox runner, joined by esbuild.mjs from ${RUNNER_DIR}/ (edit the parts there).`,
    'for _codeact_part, _codeact_text in (',
    ...parts.map(({ file, text }) => `    (${JSON.stringify(file)}, r'''${text}'''),`),
    '):',
    "    exec(compile(_codeact_text, _codeact_part, 'exec'))",
    'del _codeact_part, _codeact_text',
    start.text,
  ].join('\n');
}

/**
 * A part as it ships: each line that is only a comment, and each docstring, left empty, so that
 * every line keeps its number (a traceback still names the part's own line) while the source's one
 * argument stays well under Linux's limit (docstrings are a fifth of the parts; nothing reads a
 * __doc__ in the sandbox). A docstring is a string statement that opens a line right after a
 * def's or class's header, or at the top of the part; where it was the whole body, `pass` stays.
 * test/python/test_joined.py checks that each part still parses to exactly the tree of its source
 * without docstrings, so no line of another string was taken for a comment or a docstring.
 */
function shippedPart(text) {
  const lines = text.replace(/^[ \t]*#.*$/gm, '').split('\n');
  const code = (line) => line.trim() !== '';
  let previous = null; // the last line of code so far
  for (let i = 0; i < lines.length; i++) {
    const open = /^([ \t]*)"""/.exec(lines[i]);
    const docstring = open && (previous === null || /^\s*(async\s+def|def|class)\b/.test(headerStart(lines, i)));
    if (!docstring) {
      if (code(lines[i])) previous = lines[i];
      continue;
    }
    let end = i;
    if (!lines[i].slice(open[0].length).includes('"""')) {
      while (end < lines.length - 1 && !lines[end + 1].includes('"""')) end++;
      end++;
    }
    const next = lines.slice(end + 1).find(code);
    const bodyGoesOn = next !== undefined && /^[ \t]*/.exec(next)[0].length >= open[1].length;
    for (let j = i; j <= end; j++) lines[j] = '';
    if (!bodyGoesOn && previous !== null) lines[i] = `${open[1]}pass`;
    i = end;
  }
  return lines.join('\n');
}

/** The first line of the statement whose header ends on the last line of code before line `i`
 * (a def's parameters may take several lines); '' when that line does not end a header. */
function headerStart(lines, i) {
  let j = i - 1;
  while (j >= 0 && lines[j].trim() === '') j--;
  if (j < 0 || !/:\s*$/.test(lines[j])) return '';
  // Back over the header's continuation lines, to the one that starts it (less indented than the body).
  const body = /^[ \t]*/.exec(lines[i])[0].length;
  while (j > 0 && /^[ \t]*/.exec(lines[j])[0].length >= body) j--;
  return lines[j];
}

function fail(message) {
  console.error(message);
  process.exit(1);
}

/**
 * The run card (src/mcp/card/page/): its script bundled for the browser and inlined, with its
 * style, into card.html, so the card is one self-contained page that loads nothing. The server
 * serves it as its ui:// resource (src/mcp/card/page/html.ts reads it); it is written to
 * dist/card.html, which the sources (tsx) and test/card read.
 */
const CARD_DIR = 'src/mcp/card/page';

async function buildCard() {
  const script = await esbuild.build({
    entryPoints: [`${CARD_DIR}/main.ts`],
    bundle: true,
    platform: 'browser',
    format: 'iife',
    target: 'chrome120',
    minify: true,
    write: false,
    logLevel: 'warning',
    define: { __CODEACT_VERSION__: JSON.stringify(version) },
  });
  const style = await esbuild.transform(fs.readFileSync(`${CARD_DIR}/card.css`, 'utf8'), { loader: 'css', minify: true });
  const js = script.outputFiles[0].text.trim();
  // Inside <script>, only "</script" or "<!--" could end or bend the element; the bundle has neither.
  if (/<\/script|<!--/i.test(js) || /<\/style/i.test(style.code)) fail(`the card's script or style holds a closing tag: ${CARD_DIR} must not write one`);
  // split/join, not replace(): the bundle holds `$` sequences that replace() would read as patterns.
  return fs.readFileSync(`${CARD_DIR}/card.html`, 'utf8').split('/*CARD_STYLE*/').join(style.code.trim()).split('/*CARD_SCRIPT*/').join(js);
}

const runnerSource = joinRunner();
const runnerBytes = Buffer.byteLength(runnerSource, 'utf8');
if (runnerBytes > RUNNER_MAX_BYTES) {
  fail(
    `the sandbox runner joined from ${RUNNER_DIR}/ is ${runnerBytes} bytes, over the ${RUNNER_MAX_BYTES} this build allows: it is passed ` +
      'to python3 as one argument, which Linux refuses over 131,072 bytes. Make it smaller before building.',
  );
}
// The programs the host runs by docker exec when no runner is there to ask are made from part 05
// alone (src/docker/container/guest.ts), so they and the runner kill and count the same way.
const guestSource = fs.readFileSync(path.join(RUNNER_DIR, '05_guest.py'), 'utf8');
const watch = process.argv.includes('--watch');
// `--cli-into DIR --version V`: only the command line's two files, into DIR, stamped V (the
// Docker tests bundle their own this way, with their test version, and leave dist/ alone).
const cliInto = option('--cli-into');
const version = option('--version') ?? pkg.version;

function option(name) {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
}

const cardHtml = await buildCard();

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
    __CODEACT_VERSION__: JSON.stringify(version),
    // The sandbox's warm runner (Python) travels inside the bundle; run from the sources,
    // src/docker/container/runnerProgram.ts reads dist/runner.py and dist/guest.py.
    __CODEACT_RUNNER_SOURCE__: JSON.stringify(runnerSource),
    __CODEACT_GUEST_SOURCE__: JSON.stringify(guestSource),
    // The run card's page, one HTML string (src/mcp/card/page/html.ts reads dist/card.html when run from the sources).
    __CODEACT_CARD_HTML__: JSON.stringify(cardHtml),
    // The network proxy's credential forwarder (src/docker/images/proxyImage.ts copies it into the proxy image).
    __CODEACT_CREDENTIALS_SOURCE__: JSON.stringify(fs.readFileSync('resources/proxy/credentials.py', 'utf8')),
  },
};

/**
 * The command line starts as two files: dist/cli.js reads the options and prints the usage, and
 * loads dist/cli-commands.mjs (the engine client and the rest, split in cli-chunks/) only once a
 * command runs, so `--help` and a usage error cost what starting Node costs. A run on a kept
 * session first loads dist/cli-ahead.mjs (src/docker/ahead.ts: dockerode and the lock), which asks
 * for the session's lock while cli-commands.mjs loads; the chunks they share are read once.
 */
const LAZY_ENTRIES = { './commands': './cli-commands.mjs', '../docker/ahead': './cli-ahead.mjs' };
const lazyCommands = {
  name: 'lazy-commands',
  setup(build) {
    build.onResolve({ filter: /^(\.\/commands|\.\.\/docker\/ahead)$/ }, (args) =>
      args.importer.endsWith(path.join('src', 'cli', 'main.ts')) ? { path: LAZY_ENTRIES[args.path], external: true } : undefined,
    );
  },
};

/**
 * Parts of the engine client that no run uses are loaded on first use, so the command line's
 * first chunk (cli-commands.mjs) leaves them out: dockerode's BuildKit session and decoder (gRPC
 * and protobuf; builds here use the classic builder) become `import()`s, each a chunk of its own;
 * docker-modem's SSH transport (ssh2) is never used (ssh:// engines are dialled by
 * src/docker/engine/ssh.ts, and the client is made without DOCKER_HOST in sight), so it throws.
 */
const LAZY_REQUIRES = [
  {
    file: /dockerode[\\/]lib[\\/]docker\.js$/,
    eager: "withSession = require('./session'),",
    lazy: "withSession = function (docker, auth, handler) { import('./session.js').then(function (m) { (m.default || m)(docker, auth, handler); }, handler); },",
  },
  {
    file: /dockerode[\\/]lib[\\/]docker\.js$/,
    eager: "var buildkit = require('./buildkit');\n  return buildkit.followProgress(stream, onFinished, onProgress);",
    lazy: "import('./buildkit.js').then(function (m) { (m.default || m).followProgress(stream, onFinished, onProgress); }, onFinished);",
  },
  {
    file: /docker-modem[\\/]lib[\\/]modem\.js$/,
    eager: "ssh = require('./ssh'),",
    lazy: "ssh = function () { throw new Error('docker-modem ssh transport is not bundled: ssh:// engines are dialled by SshDialAgent'); },",
  },
];
const lazyRequires = {
  name: 'lazy-requires',
  setup(build) {
    build.onLoad({ filter: /(dockerode|docker-modem)[\\/]lib[\\/](docker|modem)\.js$/ }, async (args) => {
      let text = await fs.promises.readFile(args.path, 'utf8');
      for (const lazy of LAZY_REQUIRES.filter((l) => l.file.test(args.path))) {
        if (!text.includes(lazy.eager)) throw new Error(`${args.path} no longer has ${JSON.stringify(lazy.eager)}: update LAZY_REQUIRES in esbuild.mjs`);
        text = text.replace(lazy.eager, lazy.lazy);
      }
      return { contents: text, loader: 'js' };
    });
  },
};

const cliDir = cliInto ?? 'dist';
const cliBuilds = [
  { ...common, entryPoints: ['src/cli/main.ts'], outfile: path.join(cliDir, 'cli.js'), plugins: [lazyCommands] },
  // ESM, split: what a command imports only when it runs (the MCP SDK, the notebook export, ssh2,
  // BuildKit) is a chunk of its own in cli-chunks/, read only then. A `run` reads about half the bytes.
  {
    ...common,
    entryPoints: { 'cli-commands': 'src/cli/commands.ts', 'cli-ahead': 'src/docker/ahead.ts' },
    outdir: cliDir,
    format: 'esm',
    splitting: true,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'cli-chunks/[name]-[hash]',
    // The bundled CommonJS packages require Node's modules; __dirname is the bundle's folder (where
    // devcontainers-cli/ is), for the chunks in cli-chunks/ too.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; import { fileURLToPath as __fileURLToPath } from 'node:url'; const require = __createRequire(import.meta.url); const __filename = __fileURLToPath(import.meta.url); const __dirname = __fileURLToPath(new URL(import.meta.url.includes('/cli-chunks/') ? '..' : '.', import.meta.url));",
    },
    plugins: [lazyRequires],
  },
];
const builds = [{ ...common, entryPoints: ['src/vscode/extension.ts'], outfile: 'dist/extension.js', plugins: [lazyRequires] }, ...cliBuilds];

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

// Chunks are named by their hash: those of an earlier build would pile up.
fs.rmSync(path.join(cliDir, 'cli-chunks'), { recursive: true, force: true });
fs.rmSync(path.join(cliDir, 'cli-commands.js'), { force: true });
if (cliInto) {
  await Promise.all(cliBuilds.map((b) => esbuild.build(b)));
  process.exit(0);
}
fs.mkdirSync('dist', { recursive: true });
fs.writeFileSync('dist/runner.py', runnerSource);
fs.writeFileSync('dist/guest.py', guestSource);
fs.writeFileSync('dist/card.html', cardHtml);
if (watch) {
  copyDevcontainersCli();
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  fs.chmodSync('dist/cli.js', 0o755);
  copyDevcontainersCli();
}
