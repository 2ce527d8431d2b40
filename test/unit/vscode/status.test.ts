import * as assert from 'node:assert/strict';
import type { ProgressUpdate } from '../../../src/vscode/ui';
import { buildingView, engineView, pullProgress, statusView } from '../../../src/vscode/status';
import { rendered } from '../renderedMarkdown';

describe('status bar and progress (unit)', () => {
  const LOCAL = { url: 'unix:///var/run/docker.sock', protocol: 'unix', reason: 'platform default' } as const;
  const docker = engineView(LOCAL, { kind: 'docker', label: 'Docker 28.2.2' });

  it('names the engine as it named itself, where it was found, and before it answered names no product', () => {
    assert.deepEqual(engineView(LOCAL, { kind: 'podman', label: 'Podman 4.3.1' }), { word: 'Podman', line: 'Podman 4.3.1 at unix:///var/run/docker.sock (platform default)' });
    assert.deepEqual(docker, { word: 'Docker', line: 'Docker 28.2.2 at unix:///var/run/docker.sock (platform default)' });
    assert.deepEqual(engineView({ url: '', protocol: 'unix', reason: 'platform default' }, undefined), { word: 'engine', line: 'The container engine at the default socket (platform default)' });
    assert.deepEqual(engineView(undefined, undefined), { word: 'engine', line: 'The container engine' });
  });

  it('shows the engine in use, not the backend\'s name: Podman is never "docker" (it was "$(vm) Sandbox: docker" and "the local Docker engine")', () => {
    const podman = engineView(
      { url: 'unix:///run/user/1000/podman/podman.sock', protocol: 'unix', reason: 'setting codeactSandbox.dockerHost' },
      { kind: 'podman', label: 'Podman 4.3.1' },
    );
    assert.deepEqual(statusView({ choice: { backend: 'docker', reason: 'docker: auto, and no workspace folder is open' }, image: 'python:3.12-slim', engine: podman }), {
      text: '$(vm) Sandbox: Podman',
      tooltip:
        '**CodeAct Sandbox**\n\ndocker: auto, and no workspace folder is open\n\nImage: `python:3.12-slim`\n\nEngine: Podman 4\\.3\\.1 at unix\\:\\/\\/\\/run\\/user\\/1000\\/podman\\/podman\\.sock \\(setting codeactSandbox\\.dockerHost\\)',
    });
    assert.deepEqual(
      statusView({
        choice: { backend: 'devcontainer', reason: 'devcontainer: auto, and the workspace has .devcontainer.json', configFile: '.devcontainer.json' },
        image: 'codeact-devcontainer/abc:def',
        engine: docker,
      }).text,
      '$(vm) Sandbox: Docker, Dev Container image',
    );
    // The engine answered before any call chose an image.
    assert.deepEqual(statusView({ engine: docker }), {
      text: '$(vm) Sandbox: Docker',
      tooltip: "**CodeAct Sandbox**\n\nImage: chosen at a chat's first call\n\nEngine: Docker 28\\.2\\.2 at unix\\:\\/\\/\\/var\\/run\\/docker\\.sock \\(platform default\\)",
    });
  });

  it('shows an image and an engine name as they are in the tooltip, never as Markdown of their own', () => {
    const image = 'img`](https://evil.example) <b>x</b>';
    const line = 'https://evil.example <!-- hidden -->';
    const shown = rendered(statusView({ choice: { backend: 'docker', reason: 'docker: auto' }, image, engine: { word: 'Docker', line } }).tooltip);
    assert.deepEqual(shown.hiding, []);
    assert.equal(shown.text, `CodeAct Sandbox\n\ndocker: auto\n\nImage: ${image}\n\nEngine: ${line}`);
  });

  it('names the runtime once a sandbox runs under one, gVisor in the text too', () => {
    const choice = { backend: 'docker', reason: 'docker: the backend is set to docker' } as const;
    const runsc = statusView({ choice, image: 'img', engine: docker, runtime: 'runsc' });
    assert.equal(runsc.text, '$(vm) Sandbox: Docker (gVisor)');
    assert.ok(runsc.tooltip.endsWith('\n\nRuntime: runsc (gVisor: a user-space kernel between programs and the host kernel)'), runsc.tooltip);
    const runc = statusView({ choice, image: 'img', engine: docker, runtime: 'runc' });
    assert.equal(runc.text, '$(vm) Sandbox: Docker');
    assert.ok(runc.tooltip.endsWith('\n\nRuntime: runc (a Linux container on the host kernel)'), runc.tooltip);
  });

  it('says the image is built once per engine, not "per Docker engine" (it is Podman\'s too)', () => {
    assert.equal(buildingView().tooltip, '**CodeAct Sandbox**\n\nBuilding the sandbox image (once per engine); the notification shows its progress and the output channel its log.');
  });

  it('turns pull fractions into increments that add up to the whole, never going back', () => {
    const updates: ProgressUpdate[] = [];
    const report = pullProgress((u) => updates.push(u));
    report('Resolving');
    report('Downloading', 0.25);
    report('Downloading', 0.5);
    report('Next layer', 0.4);
    report('Extracting', 1);
    assert.deepEqual(updates, [
      { message: 'Resolving' },
      { message: 'Downloading', increment: 25 },
      { message: 'Downloading', increment: 25 },
      { message: 'Next layer', increment: 0 },
      { message: 'Extracting', increment: 60 },
    ]);
  });
});
