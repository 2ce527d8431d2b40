import { ENGINE_NOTICE_DISMISSED, engineStatusView } from '../../../src/vscode/engineState';
import * as assert from 'node:assert/strict';
import { ToolError } from '../../../src/core/errors';
import { ImageBuildError, type DataImage, type EnsureDataImageOptions, type EnsurePackagesImageOptions } from '../../../src/docker/images';
import { currentOwner } from '../../../src/docker/container/labels';
import { SettingsReader } from '../../../src/vscode/config';
import { BUILD_TITLE, PACKAGES_TITLE, type DataImageOps } from '../../../src/vscode/dataImages';
import { packagesQuestion } from '../../../src/vscode/sandboxDecision';
import { PACKAGES_APPROVED_KEY, SandboxService } from '../../../src/vscode/sandboxService';
import { buildingView } from '../../../src/vscode/status';
import { FakeState, FakeUi, FakeWorkspace, recordingLogger } from './fakes';

const NO_ENGINE = 'unix:///nonexistent/codeact-unit-test.sock';
const DATA: DataImage = { tag: 'codeact-sandbox/data:debian-0123456789abcdef', id: 'sha256:d', route: 'debian', recipeHash: 'h', built: true, distributions: [] };
const PACKAGES_TAG = 'codeact-sandbox/data-packages:fedcba9876543210';
const CANCELLED = new ImageBuildError(
  'cancelled',
  'The sandbox image build was cancelled, so the program was not run. Ask the user to start it again with the command "CodeAct Sandbox: Prepare Sandbox Image".',
  'Building the sandbox image was cancelled. Run the command "CodeAct Sandbox: Prepare Sandbox Image" to build it.',
);

/** A build the test finishes (or fails) when it wants. */
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((a, b) => ((resolve = a), (reject = b)));
  return { promise, resolve, reject };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

describe('the data image in VS Code (unit)', () => {
  let ui: FakeUi;
  let workspace: FakeWorkspace;
  let state: FakeState;
  let present: boolean;
  let packagesPresent: boolean;
  let builds: EnsureDataImageOptions[];
  let packageBuilds: EnsurePackagesImageOptions[];
  let nextBuild: ReturnType<typeof deferred<DataImage>> | undefined;
  let service: SandboxService;

  beforeEach(() => {
    ui = new FakeUi();
    workspace = new FakeWorkspace();
    workspace.user.dockerHost = NO_ENGINE;
    workspace.user.backend = 'docker';
    state = new FakeState();
    // These calls fail at an engine that is not there: its notice is engineState.test.ts's to test.
    state.values.set(ENGINE_NOTICE_DISMISSED, true);
    present = false;
    packagesPresent = false;
    builds = [];
    packageBuilds = [];
    nextBuild = undefined;
    const ops: DataImageOps = {
      find: async () => (present ? { ...DATA, built: false } : undefined),
      ensure: async (o) => {
        builds.push(o);
        o.onProgress?.({ phase: 'installing-packages', message: 'Installing packages: 10 of 20 (python3-pandas)', done: 10, total: 20, fraction: 0.5 });
        if (nextBuild) return nextBuild.promise;
        present = true;
        return DATA;
      },
      findPackages: async (_d, base, requirements) => (packagesPresent ? { tag: PACKAGES_TAG, id: 'sha256:p', requirements: [...requirements], built: false, distributions: base.distributions } : undefined),
      ensurePackages: async (o) => {
        packageBuilds.push(o);
        packagesPresent = true;
        return { tag: PACKAGES_TAG, id: 'sha256:p', requirements: [...o.requirements], built: true, distributions: [] };
      },
    };
    dataOps = ops;
    service = makeService();
  });

  let dataOps: DataImageOps;
  /** A window on this test's fakes (a second one: another window of the same workspace). */
  function makeService(): SandboxService {
    const log = recordingLogger();
    return new SandboxService({ settings: new SettingsReader(log, workspace, ui), log, owner: currentOwner('vscode', 'unit'), ui, workspace, state, dataImages: dataOps });
  }

  afterEach(async () => {
    await service.dispose();
  });

  /** A call as the tool makes it: it gets its spec, then fails at the engine that is not there. */
  async function call(signal = new AbortController().signal): Promise<unknown> {
    try {
      await service.acquire('chat:1', signal);
    } catch (e) {
      return e;
    }
    assert.fail('no engine, no sandbox');
  }

  it('the first call builds it under a progress notification, the status bar says so, the sandbox runs it', async () => {
    const build = (nextBuild = deferred<DataImage>());
    const first = call();
    await settle();
    assert.deepEqual(ui.shown, [`withProgress: ${BUILD_TITLE}`]);
    assert.deepEqual(ui.progress, [{ message: 'Installing packages: 10 of 20 (python3-pandas)', increment: 50 }]);
    assert.deepEqual(ui.status.at(-1), buildingView());
    assert.equal(builds.length, 1);
    assert.ok(builds[0]!.buildSignal, "the notification's Cancel stops the build");
    present = true;
    build.resolve(DATA);
    assert.ok((await first) instanceof ToolError); // at the missing engine, after the spec
    assert.equal(service.describe().image, DATA.tag);
    // The image in the status item, then the engine's trouble over it (the call failed there).
    assert.equal(ui.status.at(-2)!.text, '$(vm) Sandbox: engine');
    assert.deepEqual(ui.status.at(-1), { ...engineStatusView('unreachable'), warning: { command: 'codeactSandbox.checkEngine' } });
    // Built: the next call finds it.
    await call();
    assert.equal(builds.length, 1);
  });

  it('a call during the build waits for it; its Stop ends only its own wait', async () => {
    const build = (nextBuild = deferred<DataImage>());
    const first = call();
    await settle();
    const stop = new AbortController();
    const second = call(stop.signal);
    await settle();
    stop.abort();
    const e = await second;
    assert.ok(e instanceof ToolError);
    assert.equal(e.code, 'cancelled');
    assert.equal(e.modelMessage, 'The run was cancelled while the sandbox image was being built; the build goes on, and a later call uses the image once it is ready.');
    assert.equal(builds.length, 1, 'one build, one notification');
    assert.equal(ui.shown.filter((c) => c.startsWith('withProgress')).length, 1);
    build.resolve(DATA);
    await first;
    assert.equal(service.describe().image, DATA.tag);
  });

  it('after the user cancelled the build, calls get the sentence saying how to start it, until Prepare', async () => {
    const build = (nextBuild = deferred<DataImage>());
    const first = call();
    await settle();
    build.reject(CANCELLED);
    assert.equal(await first, CANCELLED);
    assert.deepEqual(ui.shown, [`withProgress: ${BUILD_TITLE}`, `info: CodeAct Sandbox: ${CANCELLED.userMessage}`]);
    const again = await call();
    assert.ok(again instanceof ToolError);
    assert.equal(again.modelMessage, CANCELLED.modelMessage);
    assert.equal(builds.length, 1, 'no new build without the user');
    nextBuild = undefined;
    assert.deepEqual(await service.prepareImage(), { tag: DATA.tag, built: [DATA.tag] });
    assert.equal(builds.length, 2);
    await call();
    assert.equal(service.describe().image, DATA.tag);
  });

  it('pre-warming never builds: no spec until the image is there', async () => {
    assert.equal(await service.prewarmSpec(), undefined);
    assert.deepEqual([builds.length, ui.shown], [0, []]);
    present = true;
    const spec = await service.prewarmSpec();
    assert.equal(spec?.image, DATA.tag);
    assert.equal(spec?.packagesSetting, 'codeactSandbox.pythonPackages');
  });

  it('packages: asked once per workspace, then installed on the data image', async () => {
    present = true;
    workspace.user.pythonPackages = ['polars==1.9.0'];
    ui.answer = 'Install Packages';
    await call();
    assert.deepEqual(ui.shown, [`askModal: ${packagesQuestion(['polars==1.9.0'])} [Install Packages | Not Now]`, `withProgress: ${PACKAGES_TITLE}`]);
    // Kept with the list it answered.
    assert.equal(state.values.get(PACKAGES_APPROVED_KEY), '["polars==1.9.0"]');
    assert.deepEqual(packageBuilds.map((b) => [b.base.tag, b.requirements]), [[DATA.tag, ['polars==1.9.0']]]);
    assert.equal(service.describe().image, PACKAGES_TAG);
    await call();
    assert.equal(ui.shown.length, 2, 'not asked again, not built again');
    // Another list is another question (the stored yes was not tied to the list).
    workspace.user.pythonPackages = ['polars==1.9.0', 'pyarrow'];
    ui.answer = undefined;
    await call();
    assert.deepEqual(ui.shown.slice(2), [`askModal: ${packagesQuestion(['polars==1.9.0', 'pyarrow'])} [Install Packages | Not Now]`]);
  });

  it('packages: Escape is no answer (asked again at the next call); Not Now holds for this window only; neither is stored', async () => {
    present = true;
    workspace.user.pythonPackages = ['polars'];
    const asked = `askModal: ${packagesQuestion(['polars'])} [Install Packages | Not Now]`;
    ui.answer = undefined;
    assert.equal(((await call()) as ToolError).code, 'cancelled');
    assert.equal(((await call()) as ToolError).code, 'cancelled');
    assert.deepEqual(ui.shown, [asked, asked]);
    ui.answer = 'Not Now';
    await call();
    await call();
    assert.deepEqual(ui.shown, [asked, asked, asked], 'Not Now: not asked again in this window');
    // Was stored as a permanent no.
    assert.equal(state.values.has(PACKAGES_APPROVED_KEY), false);
    const later = makeService();
    try {
      ui.answer = undefined;
      await later.acquire('chat:1', new AbortController().signal).catch(() => undefined);
      assert.deepEqual(ui.shown.at(-1), asked, 'a new window asks again');
    } finally {
      await later.dispose();
    }
  });

  it('packages declined: the call is refused with the way out; Prepare counts as the answer', async () => {
    present = true;
    workspace.user.pythonPackages = ['polars'];
    ui.answer = 'Not Now';
    const e = await call();
    assert.ok(e instanceof ToolError);
    assert.equal(
      e.modelMessage,
      'The user did not agree to install the packages of the codeactSandbox.pythonPackages setting now, so the program was not run. Ask the user to run "CodeAct Sandbox: Prepare Sandbox Image", which installs them, or to remove them from that setting.',
    );
    assert.deepEqual(await service.prepareImage(), { tag: PACKAGES_TAG, built: [PACKAGES_TAG] });
    assert.equal(state.values.get(PACKAGES_APPROVED_KEY), '["polars"]');
  });

  it('Prepare with an image of the user\'s choice builds nothing and says why', async () => {
    workspace.user.image = 'mine:1';
    assert.deepEqual(await service.prepareImage(), { notUsed: 'codeactSandbox.image names mine:1' });
    assert.equal(builds.length, 0);
  });
});
