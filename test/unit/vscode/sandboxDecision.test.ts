import * as assert from 'node:assert/strict';
import type { BackendChoice } from '../../../src/docker/backend';
import {
  buildQuestion,
  decideAfterAnswer,
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
  'The user chose not to build the workspace\'s Dev Container image. Ask the user to set the codeactSandbox.backend setting to docker or auto, or to run "CodeAct Sandbox: Rebuild Dev Container Image".';

function facts(over: Partial<SandboxFacts>): SandboxFacts {
  return { setting: 'auto', configuredImage: IMAGE, choice: AUTO_DEV, trusted: true, approval: undefined, ...over };
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
    const cases: [Partial<SandboxFacts>, string | undefined][] = [
      [{ setting: 'docker', choice: DOCKER }, IMAGE],
      [{ approval: false }, IMAGE],
      [{ trusted: false }, IMAGE],
      [{ approval: true, devcontainerImage: present }, TAG],
      [{ approval: undefined, devcontainerImage: present }, undefined],
      [{ setting: 'devcontainer', choice: SET_DEV, approval: false, devcontainerImage: present }, undefined],
      [{ approval: true, devcontainerImage: absent }, undefined],
      [{ approval: undefined, devcontainerImage: absent }, undefined],
      [{ setting: 'devcontainer', choice: SET_DEV, trusted: false }, undefined],
    ];
    for (const [over, expected] of cases) {
      const f = facts(over);
      assert.equal(prewarmImage(decideSandbox(f), f), expected, JSON.stringify(over));
    }
  });

  it('asks in one sentence what the build does', () => {
    assert.equal(
      buildQuestion(CONFIG),
      "CodeAct Sandbox: build the sandbox image from .devcontainer/devcontainer.json? The build runs this workspace's Dockerfile with network access; programs then run in it without network, as usual.",
    );
  });
});
