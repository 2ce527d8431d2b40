/**
 * How data image builds behave, with small recipes in a repository of this test's own (the
 * shipped recipe's image is the other suite's): route choice when nothing can start, builds
 * shared by concurrent callers, reuse, pruning of an outdated recipe, cancellation, deadlines.
 */
import * as assert from 'node:assert/strict';
import { DATA_PACKAGES, dataImageBuilding, ensureDataImage, ImageBuildError, planDataImage, type BuildProgress, type DataRecipe, type RouteName } from '../../src/docker/images';
import { docker, dockerCli, log, waitFor } from './helpers';
import { LABEL } from '../../src/docker/container/labels';

const REPOSITORY = `codeact-sandbox/data-itest-${process.pid}`;
const pkg = (module: string) => DATA_PACKAGES.find((p) => p.module === module)!;
const TABULATE: DataRecipe = { packages: [pkg('tabulate')] };
const TABULATE_YAML: DataRecipe = { packages: [pkg('tabulate'), pkg('yaml')] };
const TQDM: DataRecipe = { packages: [pkg('tqdm')] };

async function ourTags(): Promise<string[]> {
  return (await dockerCli('images', '--format', '{{.Repository}}:{{.Tag}}', REPOSITORY)).split('\n').filter(Boolean).sort();
}

/** Containers the engine still has from a build of ours (the legacy builder's step containers have no labels: find them by ancestor). */
/** Containers of a build step: of an image made from the Debian base, and not a sandbox (a data-image sandbox is one too). */
async function buildContainers(): Promise<string[]> {
  const rows = (await dockerCli('ps', '-a', '--filter', 'ancestor=debian:bookworm-slim', '--format', `{{.ID}} {{.Label "${LABEL.managed}"}}`)).split('\n');
  return rows.map((row) => row.trim().split(' ')).filter(([id, managed]) => id && !managed).map(([id]) => id!);
}

describe('data image builds (integration)', function () {
  this.timeout(600_000);
  const routes: RouteName[] = ['pip', 'debian'];

  before(async function () {
    await dockerCli('image', 'inspect', 'debian:bookworm-slim').catch(() => {
      throw new Error('debian:bookworm-slim is missing: run scripts/ensure-test-image.sh --debian');
    });
  });

  after(async function () {
    for (const tag of await ourTags()) await dockerCli('image', 'rm', tag).catch(() => undefined);
  });

  it('when no route can start, the model gets one sentence and the user another saying what to do', async function () {
    // Written for an engine without a registry (as in CI here); one that has the pip base cannot fail this way.
    if ((await dockerCli('image', 'ls', '-q', 'python:3.12-slim-bookworm')).trim()) this.skip();
    const progress: BuildProgress[] = [];
    await assert.rejects(ensureDataImage({ docker, log, recipe: TABULATE, repository: REPOSITORY, routes: ['pip'], onProgress: (p) => progress.push(p) }), (e: unknown) => {
      assert.ok(e instanceof ImageBuildError, String(e));
      assert.equal(e.code, 'image_unavailable');
      assert.equal(
        e.modelMessage,
        'The sandbox image could not be built, so the program was not run: its base image python:3.12-slim-bookworm is not on this Docker engine and no image registry answered. Ask the user to make one of them available, or to set the codeactSandbox.image setting to an image that has python3.',
      );
      assert.equal(
        e.userMessage,
        'The sandbox image cannot be built: its base image python:3.12-slim-bookworm is not on this Docker engine and no image registry answered. Load one of them into the engine (docker pull where a registry is reachable, or docker load of a saved copy), or set the codeactSandbox.image setting to an image you have.',
      );
      return true;
    });
    assert.deepEqual(
      progress.map((p) => [p.phase, p.message]),
      [
        ['choosing-route', 'Checking the pip route (python:3.12-slim-bookworm)'],
        ['pulling-base', 'Pulling python:3.12-slim-bookworm'],
      ],
    );
  });

  it('concurrent callers share one build; later calls reuse it; a new recipe prunes the old tag', async function () {
    const decisions: string[] = [];
    const watching = { ...log, info: (m: string) => (m.startsWith('data image: building') ? decisions.push(m) : log.info(m)) };
    const both = Promise.all([
      ensureDataImage({ docker, log: watching, recipe: TABULATE, repository: REPOSITORY, routes }),
      ensureDataImage({ docker, log: watching, recipe: TABULATE, repository: REPOSITORY, routes }),
    ]);
    // Shared from when the first caller has looked for the image and starts building.
    await waitFor(() => dataImageBuilding(docker, { recipe: TABULATE, repository: REPOSITORY, routes }), 'the shared build to start');
    const [a, b] = await both;
    assert.equal(dataImageBuilding(docker, { recipe: TABULATE, repository: REPOSITORY, routes }), false);
    assert.equal(decisions.length, 1, decisions.join('\n'));
    assert.equal(a.id, b.id);
    const tag = planDataImage({ recipe: TABULATE, repository: REPOSITORY }).find((p) => p.route === a.route)!.tag;
    assert.equal(a.tag, tag);
    assert.deepEqual(await ourTags(), [tag]);
    assert.ok(a.distributions.some((d) => d.name === 'tabulate' && d.requested));

    const again = await ensureDataImage({ docker, log, recipe: TABULATE, repository: REPOSITORY, routes });
    assert.deepEqual([again.id, again.built], [a.id, false]);

    const next = await ensureDataImage({ docker, log, recipe: TABULATE_YAML, repository: REPOSITORY, routes });
    assert.equal(next.built, true);
    assert.deepEqual(await ourTags(), [next.tag], 'the tag of the old recipe is gone');

    // A forced rebuild (no cached layers) moves the tag and removes the image it replaced.
    const rebuilt = await ensureDataImage({ docker, log, recipe: TABULATE_YAML, repository: REPOSITORY, routes, force: true });
    assert.deepEqual([rebuilt.tag, rebuilt.built], [next.tag, true]);
    assert.notEqual(rebuilt.id, next.id);
    await assert.rejects(dockerCli('image', 'inspect', next.id));
  });

  it('a cancelled build leaves no image and no build container, and says how to start it again', async function () {
    const cancel = new AbortController();
    const seen: string[] = [];
    const building = ensureDataImage({
      docker,
      log,
      recipe: TQDM,
      repository: REPOSITORY,
      routes,
      buildSignal: cancel.signal,
      onProgress: (p) => {
        seen.push(p.phase);
        if (p.phase === 'downloading-packages' || p.phase === 'installing-packages') cancel.abort();
      },
    });
    await assert.rejects(building, (e: unknown) => {
      assert.ok(e instanceof ImageBuildError, String(e));
      assert.equal(e.code, 'cancelled');
      assert.equal(e.modelMessage, 'The sandbox image build was cancelled, so the program was not run. Ask the user to start it again with the command "CodeAct Sandbox: Prepare Sandbox Image".');
      assert.equal(e.userMessage, 'Building the sandbox image was cancelled. Run the command "CodeAct Sandbox: Prepare Sandbox Image" to build it.');
      return true;
    });
    assert.ok(cancel.signal.aborted, `cancelled during ${seen.join(', ')}`);
    // The engine removes the step's container once it has seen the request end.
    await waitFor(async () => (await buildContainers()).length === 0, "the cancelled step's build container to be removed");
    assert.ok(!(await ourTags()).some((t) => t.includes(planDataImage({ recipe: TQDM, repository: REPOSITORY })[1]!.hash.slice(0, 16))));
  });

  it('a build past its deadline is stopped with the timeout sentence', async function () {
    await assert.rejects(ensureDataImage({ docker, log, recipe: TQDM, repository: REPOSITORY, routes, timeoutMs: 3_000 }), (e: unknown) => {
      assert.ok(e instanceof ImageBuildError, String(e));
      assert.equal(e.code, 'build_failed');
      assert.equal(
        e.modelMessage,
        'The sandbox image build did not finish within 3 seconds and was stopped, so the program was not run. Ask the user to look at the build log in the CodeAct Sandbox output channel and to start the build again with the command "CodeAct Sandbox: Prepare Sandbox Image".',
      );
      return true;
    });
  });
});
