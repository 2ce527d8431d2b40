// Run by the host runner with --untrusted: the workspace is in Restricted Mode and its
// .vscode/settings.json tries to choose the image, the engine and the deny-list.
const assert = require('node:assert/strict');
const vscode = require('vscode');
const h = require('./helpers');

describe('an untrusted workspace (host)', function () {
  let api;
  before(async function () {
    api = await h.activate();
  });

  it('is really untrusted, and the extension is active in Restricted Mode', function () {
    assert.equal(vscode.workspace.isTrusted, false);
    assert.equal(vscode.extensions.getExtension(h.EXTENSION_ID).isActive, true);
    // The workspace's settings are read (the unrestricted one is there), and VS Code withholds
    // the restricted ones because package.json lists them (the extension also ignores them itself).
    const config = vscode.workspace.getConfiguration('codeactSandbox');
    assert.equal(config.inspect('timeoutSeconds').workspaceValue, 3);
    assert.equal(config.inspect('image').workspaceValue, undefined);
    assert.equal(config.inspect('dockerHost').workspaceValue, undefined);
    assert.equal(config.inspect('runtime').workspaceValue, undefined);
    assert.equal(config.inspect('dockerContext').workspaceValue, undefined);
  });

  it("ignores the workspace's image and engine, and keeps its unrestricted settings", async function () {
    assert.equal(await h.run('print("from the user\'s image")'), "stdout:\nfrom the user's image");
    const sandboxes = api.sandboxes();
    assert.equal(sandboxes.length, 1);
    assert.equal(sandboxes[0].image, h.IMAGE);
    assert.deepEqual(api.backend(), {
      backend: 'docker',
      reason: 'docker: auto, and the workspace has no Dev Container configuration',
      image: h.IMAGE,
      engine: api.backend().engine,
      // The user's runtime (auto: gVisor where the engine has it), never the workspace's.
      runtime: api.backend().runtime,
    });
    assert.ok(['runsc', 'runc'].includes(api.backend().runtime), api.backend().runtime);
    assert.ok(!/198\.51\.100\.7/.test(api.backend().engine), api.backend().engine);
    assert.equal(
      await h.run('while True:\n    pass'),
      'The program did not finish within 3 s and was stopped. Make it faster, work on less data, or print partial results as you go.',
    );
  });

  it("keeps the deny-list although the workspace empties it", async function () {
    await assert.rejects(
      vscode.lm.invokeTool('execute_code', { input: { code: 'print(open(".env").read())', files: ['.env'] }, toolInvocationToken: undefined }),
      /"\.env" is refused: it is a protected file that may hold secrets/,
    );
    assert.equal(
      (await vscode.lm.invokeTool('execute_code', { input: { code: 'print(open("data.csv").read().strip())', files: ['data.csv'] }, toolInvocationToken: undefined }))
        .content.map((p) => p.value).join(''),
      'stdout:\na,b',
    );
  });
});
