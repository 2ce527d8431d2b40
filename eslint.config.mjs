// The layering is enforced here, not remembered: imports point adapter -> docker/storage -> core.
// Layers are folder zones: an import is resolved to the file it names and judged by the folder that
// file is in, so no depth of nesting (src/core/files/x.ts importing ../../docker/...) escapes them.
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

/** Package imports a folder may not make (the zones below cover the project's own files). */
const packages = (paths) => ({ '@typescript-eslint/no-restricted-imports': ['error', { paths }] });
const VSCODE = { name: 'vscode', message: 'only src/vscode imports vscode' };
const VSCODE_AT_RUNTIME = { ...VSCODE, message: 'only src/vscode imports vscode at run time (import type is fine)', allowTypeImports: true };
const DOCKER_CLIENT = ['dockerode', 'docker-modem'].map((name) => ({ name, message: 'only src/docker talks to the Docker client' }));

const ADAPTERS = ['./src/vscode', './src/mcp', './src/cli'];
/** The wiring the CLI and the MCP server share: on the adapters' floor, below them. */
const STANDALONE = './src/standalone';
const zone = (target, from, message, except) => ({ target, from, message, ...(except ? { except } : {}) });

/**
 * The rooms of src/docker and the rooms each may import, lowest first (src/docker/README.md draws
 * them). A room imports only rooms below it, and only through their index.ts.
 */
const DOCKER_ROOMS = {
  engine: [],
  container: ['engine'],
  files: ['engine', 'container'],
  images: ['engine', 'container'],
  devcontainer: ['engine', 'container', 'files', 'images'],
  run: ['engine', 'container'],
  network: ['engine', 'container', 'images'],
  sandbox: ['engine', 'container', 'files', 'images', 'network', 'run'],
  pool: ['engine', 'container', 'images', 'network', 'sandbox'],
};
const room = (name) => `./src/docker/${name}`;
/**
 * Light doors: files a room may be entered by besides index.ts, because they import nothing heavy.
 * The cross-process lock (container/lock.ts) is loaded before the rest of the layer by a
 * command-line run (src/docker/ahead.ts), and engine/index.ts would bring the whole engine client.
 */
const LIGHT_DOORS = { engine: ['./deadline.ts'] };
const dockerRoomZones = Object.entries(DOCKER_ROOMS).flatMap(([name, below]) => {
  const others = Object.keys(DOCKER_ROOMS).filter((other) => other !== name);
  const above = others.filter((other) => !below.includes(other));
  const files = ['backend.ts', 'index.ts'].map((file) => `./src/docker/${file}`);
  return [
    ...(above.length ? [zone(room(name), [...above.map(room), ...files], `src/docker/${name} imports only ${below.join(', ') || 'core'}`)] : []),
    ...below.map((lower) => zone(room(name), room(lower), `import src/docker/${lower} through its index.ts`, ['./index.ts', ...(LIGHT_DOORS[lower] ?? [])])),
  ];
});

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'node_modules/**', 'test/host/runner/**', 'test/host/fixtures/**', '**/*.mjs', '**/*.js'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })] },
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            zone('./src/core', ['./src/docker', './src/storage', STANDALONE, ...ADAPTERS], 'core imports nothing above it'),
            zone('./src/docker', ['./src/storage', STANDALONE, ...ADAPTERS], 'the Docker layer imports only core'),
            zone('./src/storage', ['./src/docker', STANDALONE, ...ADAPTERS], 'storage imports only core'),
            zone(STANDALONE, ADAPTERS, 'the shared wiring imports no adapter'),
            zone('./src/vscode', ['./src/cli', STANDALONE], 'the adapters never import one another'),
            // The MCP server is host-neutral: VS Code's window offers it (the run card) through its door alone.
            zone('./src/vscode', './src/mcp', 'import the MCP server through src/mcp/index.ts', ['./index.ts']),
            zone('./src/mcp', ['./src/vscode', './src/cli'], 'the adapters never import one another'),
            zone('./src/cli', ['./src/vscode'], 'the CLI runs without VS Code'),
            // ahead.ts: the light door a command-line run enters by first (src/cli/main.ts).
            zone([STANDALONE, ...ADAPTERS], './src/docker', 'import the Docker layer through src/docker/index.ts', ['./index.ts', './ahead.ts']),
            ...dockerRoomZones,
            // A chat's state is a folder with one door: the three moments of a call, the chains, the sentences.
            zone(['./src/core/*.ts', './src/core/files', './src/core/network', './src/docker', './src/storage', STANDALONE, ...ADAPTERS], './src/core/state', 'import a chat\'s state through src/core/state/index.ts', ['./index.ts']),
            // The artifact store is a folder with one door: its rule and its parts stay its own.
            zone(['./src/storage/*.ts', './src/storage/notebook', STANDALONE, ...ADAPTERS], './src/storage/artifactStore', 'import the artifact store through src/storage/artifactStore/index.ts', ['./index.ts']),
          ],
        },
      ],
    },
  },
  // Outside src/vscode, nothing loads vscode at run time (the CLI, the MCP server and plain-Node
  // unit tests could not start); core, docker and storage do not even name its types.
  { files: ['src/**/*.ts', 'test/**/*.ts'], ignores: ['src/vscode/**'], rules: packages([VSCODE_AT_RUNTIME]) },
  { files: ['src/core/**/*.ts', 'src/storage/**/*.ts'], rules: packages([VSCODE, ...DOCKER_CLIENT]) },
  { files: ['src/docker/**/*.ts'], rules: packages([VSCODE]) },
  // The run card's page is bundled for the browser and runs in a sandboxed frame: it imports its own
  // folder, the shared names and only the types of the contract (zod stays out of the frame), uses
  // none of Node's globals (TypeScript knows the browser's: dom.ts brings the DOM library), and
  // never parses markup (output and file names are shown as text). html.ts is the server's getter
  // for the built page, run by Node.
  {
    files: ['src/mcp/card/page/**/*.ts'],
    ignores: ['src/mcp/card/page/html.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^(?!\\./[^/]+$|\\.\\./names$|\\.\\./contract$)', message: 'the card page imports only its own folder, ../names and types from ../contract' },
            { regex: '^\\.\\./contract$', allowTypeImports: true, message: 'the card page imports only types from the contract (import type)' },
          ],
        },
      ],
      'no-restricted-globals': ['error', ...['process', 'Buffer', 'require', 'module', '__dirname', '__filename', 'global', 'setImmediate'].map((name) => ({ name, message: 'the card page runs in a browser' }))],
      'no-restricted-properties': ['error', ...['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'srcdoc', 'write', 'writeln'].map((property) => ({ property, message: 'the card shows data as text: use textContent or dom.ts' }))],
      'no-eval': 'error',
      'no-new-func': 'error',
    },
  },
);
