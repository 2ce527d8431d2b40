import * as assert from 'node:assert/strict';
import { ESLint } from 'eslint';

/** The lint rule is what keeps the layers apart; prove it fires, not just that it is configured. */
describe('import layering lint rule (unit)', function () {
  this.timeout(30000);
  const eslint = new ESLint();
  const violations = async (file: string, code: string) =>
    (await eslint.lintText(code, { filePath: file }))[0]!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);

  it('core may not import vscode, dockerode or upper layers', async () => {
    assert.equal((await violations('src/core/x.ts', "import * as vscode from 'vscode';\nexport const a = vscode;\n")).length, 1);
    assert.equal((await violations('src/core/x.ts', "import Docker from 'dockerode';\nexport const a = Docker;\n")).length, 1);
    assert.equal((await violations('src/core/x.ts', "import { LABEL } from '../docker/labels';\nexport const a = LABEL;\n")).length, 1);
  });

  it('the Docker layer and storage may not import vscode', async () => {
    assert.equal((await violations('src/docker/x.ts', "import * as vscode from 'vscode';\nexport const a = vscode;\n")).length, 1);
    assert.equal((await violations('src/storage/x.ts', "import * as vscode from 'vscode';\nexport const a = vscode;\n")).length, 1);
    assert.equal((await violations('src/docker/engine/x.ts', "import { ArtifactStore } from '../../storage/artifactStore';\nexport const a = ArtifactStore;\n")).length, 1);
  });

  it('the adapter may import everything below it', async () => {
    assert.deepEqual(await violations('src/vscode/x.ts', "import * as vscode from 'vscode';\nimport { LABEL } from '../docker/labels';\nexport const a = [vscode, LABEL];\n"), []);
  });
});
