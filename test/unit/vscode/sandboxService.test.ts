import { ENGINE_NOTICE_DISMISSED, engineStatusView } from '../../../src/vscode/engineState';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ToolError } from '../../../src/core/errors';
import { DEFAULTS } from '../../../src/core/limits';
import type { DevcontainerPlan } from '../../../src/docker/devcontainer';
import { DockerSandboxProvider, type ProviderOptions } from '../../../src/docker/pool/dockerSandboxProvider';
import { currentOwner } from '../../../src/docker/container/labels';
import { SettingsReader } from '../../../src/vscode/config';
import { buildQuestion } from '../../../src/vscode/sandboxDecision';
import { BUILD_APPROVED_KEY, SandboxService, type DevcontainerImages } from '../../../src/vscode/sandboxService';
import { statusView } from '../../../src/vscode/status';
import { FakeState, FakeUi, FakeWorkspace, recordingLogger } from './fakes';

const CONFIG = '.devcontainer/devcontainer.json';
const TAG = 'codeact-devcontainer/0123456789ab:0123456789abcdef';
const QUESTION = `askModal: ${buildQuestion(CONFIG)} [Build Image | Don't Build]`;
const BUILDING = 'withProgress: CodeAct Sandbox: building the Dev Container image';
// No engine listens here: a sandbox is never created, whatever the service decides.
const NO_ENGINE = 'unix:///nonexistent/codeact-unit-test.sock';
const CHOSEN = 'python:3.12-slim';

/** Lets every promise chain already started run to its end. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

/** Polls until `condition` holds; gives up by the clock, below mocha's 10 s, so the failure names `what`. */
async function until(what: string, condition: () => boolean): Promise<void> {
  for (const giveUp = Date.now() + 8_000; !condition() && Date.now() < giveUp; ) await new Promise((r) => setTimeout(r, 5));
  assert.ok(condition(), `timed out waiting for ${what}`);
}

describe('sandbox service (unit)', () => {
  let tmp: string;
  let ui: FakeUi;
  let workspace: FakeWorkspace;
  let state: FakeState;
  let log: ReturnType<typeof recordingLogger>;
  let plans: string[];
  let builds: string[];
  let imagePresent: boolean;
  let providers: ProviderOptions[];
  let service: SandboxService;

  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-service-'));
    fs.mkdirSync(path.join(tmp, '.devcontainer'));
    fs.writeFileSync(path.join(tmp, CONFIG), '{ "image": "python:3.12" }');
    ui = new FakeUi();
    workspace = new FakeWorkspace();
    workspace.folder = tmp;
    workspace.user.dockerHost = NO_ENGINE;
    // Spare sandboxes have their own (Docker) tests; here they would add looks at the plan.
    workspace.user.spareSandboxes = 0;
    // An image of the user's choice: the data image's own path is tested in dataImages.test.ts.
    workspace.user.image = CHOSEN;
    state = new FakeState();
    // These calls fail at an engine that is not there: its notice is engineState.test.ts's to test.
    state.values.set(ENGINE_NOTICE_DISMISSED, true);
    log = recordingLogger();
    plans = [];
    builds = [];
    imagePresent = false;
    providers = [];
    const devcontainer: DevcontainerImages = {
      plan: async (_docker, folder) => {
        plans.push(folder);
        const plan: DevcontainerPlan = { configFile: path.join(folder, CONFIG), relativeConfigFile: CONFIG, kind: 'image', inputs: [], hash: 'h', tag: TAG, present: imagePresent };
        return plan;
      },
      ensure: async (options) => {
        builds.push(`${options.workspaceFolder}${options.force ? ' (forced)' : ''}`);
        return { image: TAG, built: true, configFile: CONFIG };
      },
    };
    service = makeService((options) => {
      providers.push(options);
      return new DockerSandboxProvider(options);
    }, devcontainer);
  });

  /** A service on this test's fakes, with the provider `createProvider` makes. */
  function makeService(createProvider: (options: ProviderOptions) => DockerSandboxProvider, devcontainer?: DevcontainerImages): SandboxService {
    return new SandboxService({
      settings: new SettingsReader(log, workspace, ui),
      log,
      owner: currentOwner('vscode', 'unit'),
      ui,
      workspace,
      state,
      ...(devcontainer ? { devcontainer } : {}),
      createProvider,
    });
  }

  afterEach(async () => {
    await service.dispose();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  /** A call as the tool makes it; it fails after the spec, at the engine that is not there. */
  async function call(): Promise<unknown> {
    try {
      await service.acquire('chat:1', new AbortController().signal);
    } catch (e) {
      return e;
    }
    assert.fail('no engine, no sandbox');
  }

  describe('pre-warming', () => {
    it('never shows a dialog or builds, and hands the provider a spec for that', async () => {
      // Absent and never asked; absent but approved (it would have to be built); present but never approved.
      const states: [boolean | undefined, boolean][] = [
        [undefined, false],
        [true, false],
        [undefined, true],
      ];
      for (const [i, [approval, present]] of states.entries()) {
        if (approval === undefined) state.values.delete(BUILD_APPROVED_KEY);
        else state.values.set(BUILD_APPROVED_KEY, approval);
        imagePresent = present;
        service.prewarm(`chat:${i}`);
        await until('the Dev Container image lookup', () => plans.length > i);
        await settle();
        assert.deepEqual(ui.shown, [], `approval ${approval}, image present ${present}`);
        assert.deepEqual(builds, []);
        assert.equal(state.values.get(BUILD_APPROVED_KEY), approval);
      }
      assert.equal(providers.length, 1);
      assert.equal(typeof providers[0]!.prewarmSpec, 'function', 'the provider is given a prewarm spec');
      assert.deepEqual(service.active, new Map(), 'no sandbox was created ahead of time');
    });

    it('gives no spec for a Dev Container image that is absent or never approved, nor where the call would refuse', async () => {
      assert.equal(await service.prewarmSpec(), undefined); // absent, never asked
      imagePresent = true;
      assert.equal(await service.prewarmSpec(), undefined); // present, never asked
      state.values.set(BUILD_APPROVED_KEY, true);
      imagePresent = false;
      assert.equal(await service.prewarmSpec(), undefined); // approved, but it would have to be built
      workspace.user.backend = 'devcontainer';
      workspace.trusted = false;
      assert.equal(await service.prewarmSpec(), undefined); // the call is refused
      assert.deepEqual(ui.shown, []);
      assert.deepEqual(builds, []);
    });

    it('gives the spec of a present, approved Dev Container image or of the configured image', async () => {
      const spec = (image: string) => ({
        image,
        limits: { memoryMb: DEFAULTS.memoryMb, cpus: DEFAULTS.cpus, pidsLimit: DEFAULTS.pidsLimit, workAreaMb: DEFAULTS.workAreaMb },
        warmRunner: DEFAULTS.warmRunner,
        preloadModules: [...DEFAULTS.preloadModules],
        preloadWhen: DEFAULTS.preloadWhen,
        runtime: DEFAULTS.runtime,
      });
      state.values.set(BUILD_APPROVED_KEY, true);
      imagePresent = true;
      assert.deepEqual(await service.prewarmSpec(), spec(TAG));
      state.values.set(BUILD_APPROVED_KEY, false);
      assert.deepEqual(await service.prewarmSpec(), spec(CHOSEN));
      workspace.user.backend = 'docker';
      workspace.user.image = 'mine:1';
      assert.deepEqual(await service.prewarmSpec(), spec('mine:1'));
      assert.deepEqual(ui.shown, []);
    });

    it('does not pull the configured image either', async () => {
      workspace.user.backend = 'docker';
      service.prewarm('chat:1');
      await until('the attempt at the engine', () => log.lines.some((l) => l.includes('creating the sandbox ahead of time failed')));
      assert.deepEqual(ui.shown, []);
    });
  });

  describe('a call', () => {
    it('asks before the first build, keeps the answer, builds with progress and shows the image', async () => {
      ui.answer = 'Build Image';
      assert.ok((await call()) instanceof ToolError);
      assert.deepEqual(ui.shown, [QUESTION, BUILDING]);
      assert.deepEqual(builds, [tmp]);
      assert.equal(state.values.get(BUILD_APPROVED_KEY), true);
      const choice = { backend: 'devcontainer', reason: `devcontainer: auto, and the workspace has ${CONFIG}` } as const;
      assert.deepEqual(service.describe(), { ...choice, image: TAG, engine: `The container engine at ${NO_ENGINE} (setting codeactSandbox.dockerHost)` });
      // The image, then the engine's trouble over it (the call failed at the missing engine).
      assert.deepEqual(ui.status.at(-2), statusView({ choice, image: TAG, engine: { word: 'engine', line: `The container engine at ${NO_ENGINE} (setting codeactSandbox.dockerHost)` } }));
      assert.deepEqual(ui.status.at(-1), { ...engineStatusView('unreachable'), warning: { command: 'codeactSandbox.checkEngine' } });
      // Approved: the next call builds (the image is still absent here) without asking again.
      await call();
      assert.deepEqual(ui.shown, [QUESTION, BUILDING, BUILDING]);
    });

    it('auto: a dismissed question (Escape) is no answer: that call goes without the build, and the next one asks again', async () => {
      ui.answer = undefined; // the dialog was dismissed
      await call();
      assert.deepEqual(ui.shown, [QUESTION]);
      // Was stored as a permanent no.
      assert.equal(state.values.has(BUILD_APPROVED_KEY), false);
      assert.equal(service.describe().reason, `docker: auto, and the user chose not to build ${CONFIG}`);
      await call();
      assert.deepEqual(ui.shown, [QUESTION, QUESTION]);
    });

    it("auto: Don't Build falls back to the configured image, and is not asked again", async () => {
      ui.answer = "Don't Build";
      await call();
      assert.deepEqual(ui.shown, [QUESTION]);
      assert.equal(state.values.get(BUILD_APPROVED_KEY), false);
      assert.deepEqual(service.describe(), {
        backend: 'docker',
        reason: `docker: auto, and the user chose not to build ${CONFIG}`,
        image: CHOSEN,
        engine: `The container engine at ${NO_ENGINE} (setting codeactSandbox.dockerHost)`,
      });
      await call();
      assert.deepEqual(ui.shown, [QUESTION]);
      assert.deepEqual([plans.length, builds.length], [1, 0]);
    });

    it('devcontainer: a declined build fails the call with a sentence for the model', async () => {
      workspace.user.backend = 'devcontainer';
      ui.answer = "Don't Build";
      const e = await call();
      assert.ok(e instanceof ToolError);
      assert.equal(e.code, 'cancelled');
      assert.equal(
        e.modelMessage,
        'The user did not agree to build the workspace\'s Dev Container image, so the program was not run. Ask the user to set the codeactSandbox.backend setting to docker or auto, or to run "CodeAct Sandbox: Rebuild Dev Container Image".',
      );
      assert.deepEqual(builds, []);
    });

    it('a present Dev Container image is used without a question or a build', async () => {
      imagePresent = true;
      await call();
      assert.deepEqual(ui.shown, []);
      assert.deepEqual(builds, []);
      assert.equal(service.describe().image, TAG);
    });
  });

  describe('the rebuild command', () => {
    it('builds again even when the image is there, with progress', async () => {
      imagePresent = true;
      await service.rebuildDevcontainer();
      assert.deepEqual(ui.shown, [BUILDING]);
      assert.deepEqual(builds, [`${tmp} (forced)`]);
    });

    it('without a folder, says so; with a remote folder open, never says that no folder is open', async () => {
      workspace.folder = undefined;
      await assert.rejects(service.rebuildDevcontainer(), { message: 'No workspace folder is open, so there is no Dev Container to build.' });
      workspace.remote = true;
      // Was: "No local workspace folder is open, so there is no Dev Container to build."
      await assert.rejects(service.rebuildDevcontainer(), {
        message: "The workspace folder is on another machine, and a Dev Container image is built only from a folder on the user's computer.",
      });
      assert.deepEqual(builds, []);
      // The status item's reason too.
      await call();
      assert.equal(
        service.describe().reason,
        'docker: auto, and the workspace folder is on another machine (a Dev Container image is built only from a folder on this computer)',
      );
    });
  });

  describe('an image the engine lacks', () => {
    it('puts the view in its image-missing state with one error and its buttons, and a call that gets a sandbox clears it', async () => {
      let missing = true;
      const ok = { id: 'fake', image: CHOSEN, run: async () => assert.fail('not run'), collect: async () => assert.fail('not collected') };
      const lacking = makeService(
        (options) =>
          new (class extends DockerSandboxProvider {
            override async acquire() {
              if (missing) throw new ToolError('image_unavailable', `The sandbox image "${CHOSEN}" is not on this machine and could not be pulled.`);
              return ok as never;
            }
          })(options),
      );
      try {
        for (let i = 0; i < 2; i++) await assert.rejects(lacking.acquire('chat:1', new AbortController().signal), { code: 'image_unavailable' });
        assert.equal(ui.context.get('codeactSandbox.imageState'), 'missing');
        // Prepare builds the data image only: it is not offered for a named image it cannot make.
        assert.deepEqual(ui.shown, [
          'error: CodeAct Sandbox: The image named in codeactSandbox.image is not on the container engine and could not be pulled, so Copilot cannot run programs in a sandbox. ' +
            'Pull it on the engine, choose an image the engine has, or clear the setting to use the data image (built on your engine), then ask again. ' +
            '[Choose Image -> workbench.action.openSettings codeactSandbox.image | Show Log -> codeactSandbox.showLog]',
        ]);
        missing = false;
        assert.equal(await lacking.acquire('chat:1', new AbortController().signal), ok);
        assert.equal(ui.context.get('codeactSandbox.imageState'), 'ok');
      } finally {
        await lacking.dispose();
      }
    });
  });
});
