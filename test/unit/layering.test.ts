import * as assert from 'node:assert/strict';
import { ESLint } from 'eslint';

/** The lint rules are what keep the layers apart; prove they fire, not just that they are configured. */
describe('import layering lint rules (unit)', function () {
  this.timeout(60000);
  const eslint = new ESLint();
  const LAYER_RULES = new Set(['no-restricted-imports', '@typescript-eslint/no-restricted-imports', 'import-x/no-restricted-paths']);
  /** Our part of each layering message for `code` as if it were the file `file` (which need not exist). */
  const violations = async (file: string, code: string) =>
    (await eslint.lintText(code, { filePath: file }))[0]!.messages
      .filter((m) => LAYER_RULES.has(m.ruleId ?? ''))
      // The rules put "'x' import is restricted from being used." or 'Unexpected path "x" imported in restricted zone.' first.
      .map((m) => m.message.replace(/^.*?(?:from being used|in restricted zone)\. /, ''));
  const use = (imports: string) => `${imports}\nexport const used = [a];\n`;

  it('core may not import vscode, dockerode or the layers above it, from any depth', async () => {
    assert.deepEqual(await violations('src/core/x.ts', use("import * as a from 'vscode';")), ['only src/vscode imports vscode']);
    assert.deepEqual(await violations('src/core/x.ts', use("import a from 'dockerode';")), ['only src/docker talks to the Docker client']);
    assert.deepEqual(await violations('src/core/x.ts', use("import { LABEL as a } from '../docker/container/labels';")), ['core imports nothing above it']);
    assert.deepEqual(await violations('src/core/files/x.ts', use("import { LABEL as a } from '../../docker/container/labels';")), ['core imports nothing above it']);
    assert.deepEqual(await violations('src/core/files/deep/x.ts', use("import { ArtifactStore as a } from '../../../storage/artifactStore';")), [
      'core imports nothing above it',
    ]);
    assert.deepEqual(await violations('src/core/files/x.ts', use("import type * as a from 'vscode';")), ['only src/vscode imports vscode']);
  });

  it('the Docker layer and storage may not import vscode or each other', async () => {
    assert.deepEqual(await violations('src/docker/x.ts', use("import * as a from 'vscode';")), ['only src/vscode imports vscode']);
    assert.deepEqual(await violations('src/storage/x.ts', use("import * as a from 'vscode';")), ['only src/vscode imports vscode']);
    assert.deepEqual(await violations('src/docker/inner/x.ts', use("import { ArtifactStore as a } from '../../storage/artifactStore';")), [
      'the Docker layer imports only core',
    ]);
    assert.deepEqual(await violations('src/storage/x.ts', use("import { LABEL as a } from '../docker/container/labels';")), ['storage imports only core']);
  });

  it('the artifact store is entered by its index.ts alone, from storage and the adapters; its parts import one another', async () => {
    const door = 'import the artifact store through src/storage/artifactStore/index.ts';
    assert.deepEqual(await violations('src/vscode/x.ts', use("import { sessionSummaries as a } from '../storage/artifactStore/listing';")), [door]);
    assert.deepEqual(await violations('src/storage/x.ts', use("import { ArtifactStore as a } from './artifactStore/store';")), [door]);
    assert.deepEqual(await violations('src/standalone/x.ts', use("import { RunFolders as a } from '../storage/artifactStore/folders';")), [door]);
    assert.deepEqual(await violations('src/storage/x.ts', use("import { ArtifactStore as a } from './artifactStore';")), []);
    assert.deepEqual(await violations('src/storage/artifactStore/x.ts', use("import { readable as a } from './listing';")), []);
  });

  it("a chat's state is entered by its index.ts alone, from core, the layers and the adapters; its parts import one another", async () => {
    const door = "import a chat's state through src/core/state/index.ts";
    assert.deepEqual(await violations('src/core/x.ts', use("import { stateChain as a } from './state/chain';")), [door]);
    assert.deepEqual(await violations('src/storage/x.ts', use("import { STATE_LINES as a } from '../core/state/sentences';")), [door]);
    assert.deepEqual(await violations('src/vscode/x.ts', use("import { SessionStates as a } from '../core/state/states';")), [door]);
    assert.deepEqual(await violations('src/docker/run/x.ts', use("import { REFUSED as a } from '../../core/state/sentences';")), [door]);
    assert.deepEqual(await violations('src/core/x.ts', use("import { stateChain as a } from './state';")), []);
    assert.deepEqual(await violations('src/core/state/x.ts', use("import { stateChain as a } from './chain';")), []);
  });

  it('outside src/vscode nothing imports vscode at run time; a type import is allowed there', async () => {
    assert.deepEqual(await violations('src/cli/main.ts', use("import * as a from 'vscode';")), [
      'only src/vscode imports vscode at run time (import type is fine)',
    ]);
    assert.deepEqual(await violations('src/mcp/x.ts', use("import * as a from 'vscode';")), [
      'only src/vscode imports vscode at run time (import type is fine)',
    ]);
    assert.deepEqual(await violations('test/unit/x.test.ts', use("import type * as a from 'vscode';")), []);
  });

  it('the MCP adapter and the wiring it shares with the CLI may not import vscode or another adapter', async () => {
    assert.deepEqual(await violations('src/mcp/x.ts', use("import { main as a } from '../cli/main';")), ['the adapters never import one another']);
    assert.deepEqual(await violations('src/standalone/x.ts', use("import { serveMcp as a } from '../mcp/serve';")), ['the shared wiring imports no adapter']);
    assert.deepEqual(await violations('src/core/x.ts', use("import * as a from '../standalone/pipeline';")), ['core imports nothing above it']);
    assert.deepEqual(await violations('src/mcp/x.ts', use("import { currentOwner } from '../docker';\nimport { ArtifactStore } from '../storage/artifactStore';\nconst a = [currentOwner, ArtifactStore];")), []);
  });

  it("VS Code's window offers the host-neutral MCP server through its index.ts alone", async () => {
    assert.deepEqual(await violations('src/vscode/x.ts', use("import { createMcpServer as a } from '../mcp';")), []);
    assert.deepEqual(await violations('src/vscode/x.ts', use("import { serveMcp as a } from '../mcp/serve';")), ['import the MCP server through src/mcp/index.ts']);
    assert.deepEqual(await violations('src/vscode/x.ts', use("import { LiveCalls as a } from '../mcp/card/live';")), ['import the MCP server through src/mcp/index.ts']);
  });

  it('the adapters may import everything below them, never one another', async () => {
    assert.deepEqual(await violations('src/vscode/x.ts', use("import * as v from 'vscode';\nimport { currentOwner } from '../docker';\nconst a = [v, currentOwner];")), []);
    assert.deepEqual(await violations('src/cli/main.ts', use("import { ExecuteCodeTool as a } from '../vscode/executeCodeTool';")), [
      'the CLI runs without VS Code',
    ]);
  });

  it('the adapters and their shared wiring reach the Docker layer only through its index.ts', async () => {
    const deep = use("import { LABEL as a } from '../docker/container/labels';");
    for (const file of ['src/vscode/x.ts', 'src/mcp/x.ts', 'src/standalone/x.ts']) {
      assert.deepEqual(await violations(file, deep), ['import the Docker layer through src/docker/index.ts']);
    }
    assert.deepEqual(await violations('src/cli/main.ts', use("import { LABEL as a } from '../docker/container/labels';")), ['import the Docker layer through src/docker/index.ts']);
    assert.deepEqual(await violations('src/cli/main.ts', use("import { currentOwner as a } from '../docker';")), []);
    // The light door a command-line run enters by before the rest of the layer is loaded.
    assert.deepEqual(await violations('src/cli/main.ts', use("import { lockCliSessionAhead as a } from '../docker/ahead';")), []);
  });

  it('a room of src/docker imports only the rooms below it, each through its index.ts', async () => {
    // below, through the door: allowed
    assert.deepEqual(await violations('src/docker/pool/x.ts', use("import { LABEL as a } from '../container';")), []);
    assert.deepEqual(await violations('src/docker/sandbox/x.ts', use("import { RunnerChannel as a } from '../run';")), []);
    // below, past the door
    assert.deepEqual(await violations('src/docker/pool/x.ts', use("import { LABEL as a } from '../container/labels';")), ['import src/docker/container through its index.ts']);
    assert.deepEqual(await violations('src/docker/run/deep/x.ts', use("import { statusCode as a } from '../../engine/errors';")), ['import src/docker/engine through its index.ts']);
    // a light door (engine/deadline.ts imports nothing): allowed; any other file still is past the door
    assert.deepEqual(await violations('src/docker/container/x.ts', use("import { withDeadline as a } from '../engine/deadline';")), []);
    assert.deepEqual(await violations('src/docker/container/x.ts', use("import { readContext as a } from '../engine/context';")), ['import src/docker/engine through its index.ts']);
    // above or beside
    assert.deepEqual(await violations('src/docker/engine/x.ts', use("import { LABEL as a } from '../container';")), ['src/docker/engine imports only core']);
    assert.deepEqual(await violations('src/docker/container/x.ts', use("import { RunnerChannel as a } from '../run';")), ['src/docker/container imports only engine']);
    assert.deepEqual(await violations('src/docker/run/x.ts', use("import { collectFiles as a } from '../files';")), ['src/docker/run imports only engine, container']);
    assert.deepEqual(await violations('src/docker/sandbox/x.ts', use("import { DockerSandboxProvider as a } from '../pool';")), [
      'src/docker/sandbox imports only engine, container, files, images, network, run',
    ]);
    assert.deepEqual(await violations('src/docker/images/x.ts', use("import { chooseBackend as a } from '../backend';")), ['src/docker/images imports only engine, container']);
    // within a room, any file
    assert.deepEqual(await violations('src/docker/pool/x.ts', use("import { removeCliSandboxes as a } from './cleanup';")), []);
  });
});
