import * as assert from 'node:assert/strict';
import type { ProgressUpdate } from '../../../src/vscode/ui';
import { pullProgress, statusView } from '../../../src/vscode/status';
import { rendered } from '../renderedMarkdown';

describe('status bar and progress (unit)', () => {
  it('shows the backend, and why, which image and which engine in the tooltip', () => {
    assert.deepEqual(statusView({ backend: 'docker', reason: 'docker: auto, and no workspace folder is open' }, 'python:3.12-slim', undefined), {
      text: '$(vm) Sandbox: docker',
      tooltip: '**CodeAct Sandbox**\n\ndocker: auto, and no workspace folder is open\n\nImage: `python:3.12-slim`\n\nEngine: the local Docker engine',
    });
    assert.deepEqual(
      statusView(
        { backend: 'devcontainer', reason: 'devcontainer: auto, and the workspace has .devcontainer.json', configFile: '.devcontainer.json' },
        'codeact-devcontainer/abc:def',
        'build-host:2376',
      ),
      {
        text: '$(vm) Sandbox: devcontainer',
        tooltip:
          '**CodeAct Sandbox**\n\ndevcontainer: auto, and the workspace has .devcontainer.json\n\nImage: `codeact-devcontainer/abc:def`\n\nEngine: build\\-host\\:2376',
      },
    );
  });

  it('shows an image and an engine name as they are in the tooltip, never as Markdown of their own', () => {
    const image = 'img`](https://evil.example) <b>x</b>';
    const engine = 'https://evil.example <!-- hidden -->';
    const shown = rendered(statusView({ backend: 'docker', reason: 'docker: auto' }, image, engine).tooltip);
    assert.deepEqual(shown.hiding, []);
    assert.equal(shown.text, `CodeAct Sandbox\n\ndocker: auto\n\nImage: ${image}\n\nEngine: ${engine}`);
  });

  it('names the runtime once a sandbox runs under one, gVisor in the text too', () => {
    const choice = { backend: 'docker', reason: 'docker: the backend is set to docker' } as const;
    assert.deepEqual(statusView(choice, 'img', undefined, 'runsc'), {
      text: '$(vm) Sandbox: docker (gVisor)',
      tooltip:
        '**CodeAct Sandbox**\n\ndocker: the backend is set to docker\n\nImage: `img`\n\nEngine: the local Docker engine\n\nRuntime: runsc (gVisor: a user-space kernel between programs and the host kernel)',
    });
    assert.deepEqual(statusView(choice, 'img', undefined, 'runc'), {
      text: '$(vm) Sandbox: docker',
      tooltip: '**CodeAct Sandbox**\n\ndocker: the backend is set to docker\n\nImage: `img`\n\nEngine: the local Docker engine\n\nRuntime: runc (a Linux container on the host kernel)',
    });
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
