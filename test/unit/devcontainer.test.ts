import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ToolError } from '../../src/core/errors';
import { chooseBackend } from '../../src/docker/backend';
import { configFiles, configHash, copySources, devcontainerImageTag, inspectConfig, parseJsonc } from '../../src/docker/devcontainer';
import { contextInputs } from '../../src/docker/devcontainer/contextFiles';

function workspace(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-dc-unit-'));
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), content);
  }
  return dir;
}

describe('Dev Container configuration (unit)', () => {
  const made: string[] = [];
  const ws = (files: Record<string, string>) => {
    const d = workspace(files);
    made.push(d);
    return d;
  };
  after(() => made.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

  it('reads devcontainer.json as JSON with comments and trailing commas', () => {
    assert.deepEqual(parseJsonc('// c\n{ "a": "x // not a comment", /* b */ "b": [1, 2,], "c": "q\\"/*",\n}'), { a: 'x // not a comment', b: [1, 2], c: 'q"/*' });
    assert.equal(parseJsonc('{ nope'), undefined);
  });

  it('refuses, rather than repairs, a devcontainer.json with any syntax error', () => {
    // jsonc-parser would recover a partial value from each of these; a guess is not hashed.
    assert.equal(parseJsonc('{ "build": { "dockerfile": "Dockerfile" } "name": "x" }'), undefined);
    assert.equal(parseJsonc('{ "image": "x" } /* unterminated'), undefined);
    assert.equal(parseJsonc('{ "image": "x" } trailing'), undefined);
    assert.equal(parseJsonc(''), undefined);
    assert.equal(parseJsonc('null'), null);
    assert.deepEqual(parseJsonc('/* a */ { "image": "x", "features": { "./local": {}, }, } // end'), { image: 'x', features: { './local': {} } });
  });

  it('finds the COPY and ADD sources that read the build context', () => {
    const df = [
      'FROM base AS b',
      'COPY requirements.txt /tmp/',
      'COPY --chown=1000:1000 ["src dir/", "/app/"]',
      'ADD https://example.invalid/x.tgz /x',
      'COPY --from=b /etc/passwd /p',
      'COPY a.txt \\',
      '     b.txt /multi/',
      'COPY <<EOF /inline',
      'hello',
      'EOF',
      '# COPY commented.txt /c',
      'copy lower/*.cfg /etc/',
    ].join('\n');
    assert.deepEqual(copySources(df), ['requirements.txt', 'src dir/', 'a.txt', 'b.txt', 'lower/*.cfg']);
  });

  it('finds .devcontainer/devcontainer.json, then .devcontainer.json, else nothing', async () => {
    assert.equal(await configFiles(ws({ 'README.md': 'x' })), undefined);
    assert.equal(await configHash(ws({ 'README.md': 'x' })), undefined);
    const root = ws({ '.devcontainer.json': '{"image": "python:3"}' });
    const info = await inspectConfig(root);
    assert.equal(info?.relativeConfigFile, '.devcontainer.json');
    assert.equal(info?.kind, 'image');
    assert.deepEqual(info?.inputs, [path.join(root, '.devcontainer.json')]);
  });

  it('hashes devcontainer.json, the Dockerfile and the context files it copies, and nothing else', async () => {
    const dir = ws({
      '.devcontainer/devcontainer.json': '{ // comment\n "build": { "dockerfile": "Dockerfile", "context": ".." },\n}',
      '.devcontainer/Dockerfile': 'FROM base\nCOPY requirements.txt /tmp/\nCOPY conf/ /etc/app/\nCOPY *.cfg /etc/\n',
      'requirements.txt': 'numpy\n',
      'conf/a.ini': 'a',
      'conf/sub/b.ini': 'b',
      'x.cfg': 'x',
      'unrelated.py': 'print(1)\n',
      '.dockerignore': 'node_modules\n',
    });
    const files = (await configFiles(dir))!.map((f) => path.relative(dir, f).split(path.sep).join('/'));
    assert.deepEqual(files, [
      '.devcontainer/devcontainer.json',
      '.devcontainer/Dockerfile',
      '.dockerignore',
      'conf/a.ini',
      'conf/sub/b.ini',
      'requirements.txt',
      'x.cfg',
    ]);
    const h1 = (await configHash(dir))!;
    assert.match(h1, /^[0-9a-f]{64}$/);
    // Unrelated files do not change it; every input does.
    fs.writeFileSync(path.join(dir, 'unrelated.py'), 'print(2)\n');
    assert.equal(await configHash(dir), h1);
    const changes: [string, string][] = [
      ['requirements.txt', 'pandas\n'],
      ['conf/sub/b.ini', 'B'],
      ['x.cfg', 'y'],
      ['.devcontainer/Dockerfile', 'FROM base\nCOPY requirements.txt /tmp/\nCOPY conf/ /etc/app/\nCOPY *.cfg /etc/\nRUN true\n'],
      ['.devcontainer/devcontainer.json', '{ "build": { "dockerfile": "Dockerfile", "context": ".." }, "name": "n" }'],
    ];
    let previous = h1;
    for (const [file, content] of changes) {
      fs.writeFileSync(path.join(dir, file), content);
      const h = (await configHash(dir))!;
      assert.notEqual(h, previous, `changing ${file} must change the hash`);
      previous = h;
    }
    // A new file matching a glob is an input too.
    fs.writeFileSync(path.join(dir, 'z.cfg'), 'z');
    assert.notEqual(await configHash(dir), previous);
  });

  it('derives the tag from the folder and the hash, and refuses Compose configurations', async () => {
    const tag = devcontainerImageTag('/some/folder', 'ab'.repeat(32));
    assert.match(tag, /^codeact-devcontainer\/[0-9a-f]{12}:abababababababab$/);
    assert.notEqual(devcontainerImageTag('/other/folder', 'ab'.repeat(32)), tag);
    const compose = ws({ '.devcontainer/devcontainer.json': '{"dockerComposeFile": "compose.yml", "service": "app"}' });
    await assert.rejects(inspectConfig(compose), (e: unknown) => e instanceof ToolError && e.code === 'invalid_settings' && /uses Docker Compose/.test(e.modelMessage));
  });
});

describe('build-context files a COPY source reads (unit)', () => {
  let context: string;
  before(() => {
    context = workspace({
      'a.cfg': '',
      '.hidden.cfg': '',
      'sub/b.cfg': '',
      'conf/a.ini': '',
      'conf/sub/b.ini': '',
      'file1.txt': '',
      'file10.txt': '',
      'a.md': '',
      'x.md': '',
      'report (1) final.txt': '',
      'report 1 final.txt': '',
      '{a,b}.json': '',
      'a.json': '',
      'deep/er/c.py': '',
      'top.py': '',
      'plain.txt': '',
    });
  });
  after(() => fs.rmSync(context, { recursive: true, force: true }));
  const inputs = async (...sources: string[]) => (await contextInputs(context, sources)).map((f) => path.relative(context, f).split(path.sep).join('/')).sort();

  it('matches wildcards within one folder level, dotfiles included, as the builder does', async () => {
    assert.deepEqual(await inputs('*.cfg'), ['.hidden.cfg', 'a.cfg']);
    assert.deepEqual(await inputs('./*/*.cfg'), ['sub/b.cfg']);
    assert.deepEqual(await inputs('file?.txt'), ['file1.txt']);
    assert.deepEqual(await inputs('[!x]*.md'), ['a.md']);
    assert.deepEqual(await inputs('[^a]*.md'), ['x.md']);
  });

  it('takes a folder that a wildcard matches with all its files, and lets ** span folders', async () => {
    assert.deepEqual(await inputs('con?'), ['conf/a.ini', 'conf/sub/b.ini']);
    assert.deepEqual(await inputs('**/*.py'), ['deep/er/c.py', 'top.py']);
  });

  it('reads parentheses, braces and a leading ! as plain characters', async () => {
    assert.deepEqual(await inputs('report (1)*.txt'), ['report (1) final.txt']);
    assert.deepEqual(await inputs('{a,b}*.json'), ['{a,b}.json']);
    assert.deepEqual(await inputs('!*.txt'), []);
  });

  it('takes plain paths as they are and nothing outside the context', async () => {
    assert.deepEqual(await inputs('plain.txt', '/conf/sub', '../outside.txt', 'missing.txt'), ['conf/sub/b.ini', 'plain.txt']);
  });
});

describe('backend choice (unit)', () => {
  let withConfig: string;
  let without: string;
  before(() => {
    withConfig = workspace({ '.devcontainer/devcontainer.json': '{"image": "x"}' });
    without = workspace({ 'a.py': '' });
  });
  after(() => [withConfig, without].forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

  it('docker is docker; auto picks devcontainer only for a trusted workspace with a configuration', async () => {
    assert.equal((await chooseBackend({ setting: 'docker', workspaceFolder: withConfig, trusted: true })).backend, 'docker');
    const auto = await chooseBackend({ setting: 'auto', workspaceFolder: withConfig, trusted: true });
    assert.deepEqual(auto, { backend: 'devcontainer', reason: 'devcontainer: auto, and the workspace has .devcontainer/devcontainer.json', configFile: '.devcontainer/devcontainer.json' });
    assert.deepEqual(await chooseBackend({ setting: 'auto', workspaceFolder: without, trusted: true }), {
      backend: 'docker',
      reason: 'docker: auto, and the workspace has no Dev Container configuration',
    });
    assert.deepEqual(await chooseBackend({ setting: 'auto', workspaceFolder: withConfig, trusted: false }), {
      backend: 'docker',
      reason: 'docker: auto, and the workspace is not trusted, so its .devcontainer/devcontainer.json is not built',
    });
    assert.equal((await chooseBackend({ setting: 'auto', trusted: true })).backend, 'docker');
  });

  it('devcontainer is refused, with a sentence for the model, when untrusted or without a configuration', async () => {
    const untrusted = chooseBackend({ setting: 'devcontainer', workspaceFolder: withConfig, trusted: false, settingHint: 'the codeactSandbox.backend setting' });
    await assert.rejects(untrusted, (e: unknown) => e instanceof ToolError && e.code === 'invalid_settings' && /not trusted/.test(e.modelMessage) && /codeactSandbox\.backend setting to docker/.test(e.modelMessage));
    await assert.rejects(chooseBackend({ setting: 'devcontainer', workspaceFolder: without, trusted: true }), (e: unknown) => e instanceof ToolError && /has no \.devcontainer\/devcontainer\.json/.test(e.modelMessage));
    await assert.rejects(chooseBackend({ setting: 'devcontainer', trusted: true }), (e: unknown) => e instanceof ToolError && /no workspace folder is open/.test(e.modelMessage));
    assert.equal((await chooseBackend({ setting: 'devcontainer', workspaceFolder: withConfig, trusted: true })).backend, 'devcontainer');
  });
});
