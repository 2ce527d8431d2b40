import * as assert from 'node:assert/strict';
import type { BackendChoice } from '../../../src/docker/backend';
import {
  buildQuestion,
  decideAfterAnswer,
  decideAfterPackagesAnswer,
  packagesQuestion,
  decideSandbox,
  needsDevcontainerImage,
  prewarmImage,
  type SandboxDecision,
  type SandboxFacts,
} from '../../../src/vscode/sandboxDecision';

const CONFIG = '.devcontainer/devcontainer.json';
const TAG = 'codeact-devcontainer/0123456789ab:0123456789abcdef';
const IMAGE = 'python:3.12-slim';
const DOCKER: BackendChoice = { backend: 'docker', reason: 'docker: the backend is set to docker' };
const AUTO_DEV: BackendChoice = { backend: 'devcontainer', reason: `devcontainer: auto, and the workspace has ${CONFIG}`, configFile: CONFIG };
const SET_DEV: BackendChoice = { backend: 'devcontainer', reason: `devcontainer: the backend is set to devcontainer (${CONFIG})`, configFile: CONFIG };
const DECLINED: BackendChoice = { backend: 'docker', reason: `docker: auto, and the user chose not to build ${CONFIG}` };
const REFUSED_BUILD =
  'The user did not agree to build the workspace\'s Dev Container image, so the program was not run. Ask the user to set the codeactSandbox.backend setting to docker or auto, or to run "CodeAct Sandbox: Rebuild Dev Container Image".';

function facts(over: Partial<SandboxFacts>): SandboxFacts {
  return { setting: 'auto', configuredImage: IMAGE, choice: AUTO_DEV, trusted: true, approval: undefined, packages: [], packagesApproval: undefined, ...over };
}
const absent = { tag: TAG, present: false };
const present = { tag: TAG, present: true };

describe('sandbox backend decision (unit)', () => {
  it('the docker backend runs the configured image, whatever else is known', () => {
    for (const approval of [undefined, true, false]) {
      const f = facts({ setting: 'docker', choice: DOCKER, approval });
      assert.equal(needsDevcontainerImage(f), false);
      assert.deepEqual(decideSandbox(f), { kind: 'configured', choice: DOCKER, image: IMAGE });
    }
  });

  it('a present Dev Container image is used without asking', () => {
    for (const [setting, choice] of [['auto', AUTO_DEV], ['devcontainer', SET_DEV]] as const) {
      for (const approval of setting === 'auto' ? [undefined, true] : [undefined, true, false]) {
        const f = facts({ setting, choice, approval, devcontainerImage: present });
        assert.equal(needsDevcontainerImage(f), true);
        assert.deepEqual(decideSandbox(f), { kind: 'present', choice, image: TAG });
      }
    }
  });

  it('an absent image is built once approved, and asked for before', () => {
    assert.deepEqual(decideSandbox(facts({ approval: true, devcontainerImage: absent })), { kind: 'build', choice: AUTO_DEV, tag: TAG });
    assert.deepEqual(decideSandbox(facts({ devcontainerImage: absent })), { kind: 'ask', choice: AUTO_DEV, configFile: CONFIG, tag: TAG });
    // The backend set to devcontainer asks again after an earlier no.
    assert.deepEqual(decideSandbox(facts({ setting: 'devcontainer', choice: SET_DEV, approval: false, devcontainerImage: absent })), {
      kind: 'ask',
      choice: SET_DEV,
      configFile: CONFIG,
      tag: TAG,
    });
  });

  it('auto after the user declined: the configured image, without looking the Dev Container image up', () => {
    const f = facts({ approval: false });
    assert.equal(needsDevcontainerImage(f), false);
    assert.deepEqual(decideSandbox(f), { kind: 'configured', choice: DECLINED, image: IMAGE });
  });

  it('an untrusted workspace is never built for: auto falls back, devcontainer is refused', () => {
    for (const approval of [undefined, true]) {
      assert.equal(needsDevcontainerImage(facts({ trusted: false, approval })), false);
      assert.deepEqual(decideSandbox(facts({ trusted: false, approval })), {
        kind: 'configured',
        choice: { backend: 'docker', reason: `docker: auto, and the workspace is not trusted, so its ${CONFIG} is not built` },
        image: IMAGE,
      });
      assert.deepEqual(decideSandbox(facts({ setting: 'devcontainer', choice: SET_DEV, trusted: false, approval })), {
        kind: 'refuse',
        code: 'invalid_settings',
        message:
          "The sandbox is set to build the workspace's Dev Container, but the workspace is not trusted, so nothing from it is built. Ask the user to trust the workspace, or to set the codeactSandbox.backend setting to docker.",
      });
    }
  });

  it('the image must have been looked up when the decision needs it', () => {
    assert.throws(() => decideSandbox(facts({})), /the Dev Container image was not looked up/);
  });

  it('after the answer: yes builds; no falls back under auto and refuses under devcontainer', () => {
    const autoAsk = decideSandbox(facts({ devcontainerImage: absent })) as Extract<SandboxDecision, { kind: 'ask' }>;
    assert.deepEqual(decideAfterAnswer(facts({}), autoAsk, true), { kind: 'build', choice: AUTO_DEV, tag: TAG });
    assert.deepEqual(decideAfterAnswer(facts({}), autoAsk, false), { kind: 'configured', choice: DECLINED, image: IMAGE });
    const setFacts = facts({ setting: 'devcontainer', choice: SET_DEV, devcontainerImage: absent });
    const setAsk = decideSandbox(setFacts) as Extract<SandboxDecision, { kind: 'ask' }>;
    assert.deepEqual(decideAfterAnswer(setFacts, setAsk, false), { kind: 'refuse', code: 'cancelled', message: REFUSED_BUILD });
  });

  it('pre-warming takes the configured image, or a present Dev Container image the user approved; nothing else', () => {
    const cases: [Partial<SandboxFacts>, unknown][] = [
      [{ setting: 'docker', choice: DOCKER }, { image: IMAGE }],
      [{ approval: false }, { image: IMAGE }],
      [{ trusted: false }, { image: IMAGE }],
      [{ approval: true, devcontainerImage: present }, { image: TAG }],
      // The data image: only once it is built, which the service checks without building.
      [{ setting: 'docker', choice: DOCKER, configuredImage: '' }, { dataImage: [] }],
      [{ setting: 'docker', choice: DOCKER, configuredImage: '', packages: ['polars'], packagesApproval: true }, { dataImage: ['polars'] }],
      [{ setting: 'docker', choice: DOCKER, configuredImage: '', packages: ['polars'] }, undefined],
      [{ approval: undefined, devcontainerImage: present }, undefined],
      [{ setting: 'devcontainer', choice: SET_DEV, approval: false, devcontainerImage: present }, undefined],
      [{ approval: true, devcontainerImage: absent }, undefined],
      [{ approval: undefined, devcontainerImage: absent }, undefined],
      [{ setting: 'devcontainer', choice: SET_DEV, trusted: false }, undefined],
    ];
    for (const [over, expected] of cases) {
      const f = facts(over);
      assert.deepEqual(prewarmImage(decideSandbox(f), f), expected, JSON.stringify(over));
    }
  });

  describe('the data image (an empty image setting)', () => {
    const data = (over: Partial<SandboxFacts>) => facts({ setting: 'docker', choice: DOCKER, configuredImage: '', ...over });
    const REFUSED_PACKAGES =
      'The user did not agree to install the packages of the codeactSandbox.pythonPackages setting now, so the program was not run. Ask the user to run "CodeAct Sandbox: Prepare Sandbox Image", which installs them, or to remove them from that setting.';

    it('without packages: the data image, trusted or not (its recipe is ours, not the workspace\'s)', () => {
      for (const trusted of [true, false]) assert.deepEqual(decideSandbox(data({ trusted })), { kind: 'data', choice: DOCKER, requirements: [] });
    });

    it('auto falls back to it when the Dev Container is not built', () => {
      assert.deepEqual(decideSandbox(facts({ configuredImage: '', approval: false })), { kind: 'data', choice: DECLINED, requirements: [] });
      assert.deepEqual(decideSandbox(facts({ configuredImage: '', trusted: false })), {
        kind: 'data',
        choice: { backend: 'docker', reason: `docker: auto, and the workspace is not trusted, so its ${CONFIG} is not built` },
        requirements: [],
      });
    });

    it('packages: asked once, then installed; a no refuses with the way out', () => {
      const ask = decideSandbox(data({ packages: ['polars==1.9.0'] }));
      assert.deepEqual(ask, { kind: 'ask-packages', choice: DOCKER, requirements: ['polars==1.9.0'] });
      assert.deepEqual(decideAfterPackagesAnswer(ask as Extract<SandboxDecision, { kind: 'ask-packages' }>, true), { kind: 'data', choice: DOCKER, requirements: ['polars==1.9.0'] });
      assert.deepEqual(decideSandbox(data({ packages: ['polars==1.9.0'], packagesApproval: true })), { kind: 'data', choice: DOCKER, requirements: ['polars==1.9.0'] });
      const refused = { kind: 'refuse', code: 'cancelled', message: REFUSED_PACKAGES };
      assert.deepEqual(decideAfterPackagesAnswer(ask as Extract<SandboxDecision, { kind: 'ask-packages' }>, false), refused);
      assert.deepEqual(decideSandbox(data({ packages: ['polars==1.9.0'], packagesApproval: false })), refused);
    });

    it('packages are never installed for an untrusted workspace that was not approved', () => {
      assert.deepEqual(decideSandbox(data({ trusted: false, packages: ['polars'] })), {
        kind: 'refuse',
        code: 'invalid_settings',
        message:
          'The codeactSandbox.pythonPackages setting asks for packages, but the workspace is not trusted, so nothing is installed with network access for it. Ask the user to trust the workspace, or to remove the packages from that setting.',
      });
    });

    it('packages do not apply to a chosen image or a Dev Container, and the log says so', () => {
      assert.deepEqual(decideSandbox(data({ configuredImage: IMAGE, packages: ['polars'] })), {
        kind: 'configured',
        choice: DOCKER,
        image: IMAGE,
        note: 'codeactSandbox.pythonPackages (polars) does not apply to an image the user chose (codeactSandbox.image = python:3.12-slim); it adds packages to the data image only',
      });
      assert.deepEqual(decideSandbox(facts({ configuredImage: '', packages: ['polars'], devcontainerImage: present })), {
        kind: 'present',
        choice: AUTO_DEV,
        image: TAG,
        note: "codeactSandbox.pythonPackages (polars) does not apply to the Dev Container backend (its image is the workspace's own); it adds packages to the data image only",
      });
    });

    it('asks in one sentence what installing does', () => {
      assert.equal(
        packagesQuestion(['polars==1.9.0', 'pyarrow']),
        'CodeAct Sandbox: install polars==1.9.0, pyarrow (codeactSandbox.pythonPackages) into the sandbox image? pip downloads them with network access during the build; programs then run without network, as usual.',
      );
    });
  });

  it('asks in one sentence what the build does', () => {
    assert.equal(
      buildQuestion(CONFIG),
      "CodeAct Sandbox: build the sandbox image from .devcontainer/devcontainer.json? The build runs this workspace's Dockerfile with network access; programs then run in it without network, as usual.",
    );
  });
});
