import * as assert from 'node:assert/strict';
import { ensurePackagesImage, ImageBuildError, RequirementRejectedError } from '../../src/docker/images';
import { testDataImage, type DataImageRun } from './fixtures/dataImage';
import { makeWheel, serveSimpleIndex, type SimpleIndex } from './fixtures/simpleIndex';
import { dockerCli, docker, log, recentLog, run, uniqueSessionKey, useDocker } from './helpers';

/** Our own repository, so pruning here never touches a user's packages images. */
const REPOSITORY = `codeact-sandbox/data-packages-itest-${process.pid}`;

describe('packages the user adds (integration)', function () {
  const sandboxes = useDocker();
  let made: DataImageRun;
  let index: SimpleIndex;

  before(async function () {
    this.timeout(45 * 60_000);
    made = await testDataImage();
    const wheel = await makeWheel('codeact-demo-stats', '1.0.0', '__version__ = "1.0.0"\n\n\ndef answer():\n    return 42\n');
    index = await serveSimpleIndex([wheel]);
  });

  after(async function () {
    await index?.close();
    const tags = (await dockerCli('images', '--format', '{{.Repository}}:{{.Tag}}', REPOSITORY)).split('\n').filter(Boolean);
    for (const tag of tags) await dockerCli('image', 'rm', tag);
  });

  /** pip in the build reaches the index on the engine's loopback through the host network. */
  const build = (requirements: string[]) =>
    ensurePackagesImage({ docker, log, base: made.image, requirements, indexUrl: index.url, networkMode: 'host', repository: REPOSITORY });

  it('a wheel from a local index is built into a derived image, and imports in the sandbox', async function () {
    this.timeout(300_000);
    const started = Date.now();
    const image = await build(['codeact-demo-stats==1.0.0']);
    log.info(`packages image built in ${Date.now() - started} ms`);
    assert.equal(image.built, true);
    assert.match(image.tag, new RegExp(`^${REPOSITORY}:[0-9a-f]{16}$`));
    assert.deepEqual(image.requirements, ['codeact-demo-stats==1.0.0']);
    assert.ok(index.requests.includes('/simple/codeact-demo-stats/'), index.requests.join(' '));
    assert.ok(index.requests.includes('/files/codeact_demo_stats-1.0.0-py3-none-any.whl'), index.requests.join(' '));
    // Its labels say what it has: the user's package, marked requested, beside the stack.
    const demo = image.distributions.find((d) => d.name === 'codeact-demo-stats');
    assert.deepEqual(demo, { name: 'codeact-demo-stats', version: '1.0.0', modules: ['codeact_demo_stats'], requested: true });
    assert.equal(image.distributions.filter((d) => d.requested).length, made.image.distributions.filter((d) => d.requested).length + 1);

    const pandas = made.image.distributions.find((d) => d.name === 'pandas')!.version;
    const provider = sandboxes.makeProvider({ image: image.tag, limits: { memoryMb: 1024 } });
    const r = await run(provider, uniqueSessionKey('packages'), 'import codeact_demo_stats, pandas\nprint(codeact_demo_stats.answer(), codeact_demo_stats.__version__, pandas.__version__)');
    assert.equal(r.text, `stdout:\n42 1.0.0 ${pandas}`);

    // The same (base, requirements) again: found by its tag, not built.
    const again = await build([' codeact-demo-stats==1.0.0', 'codeact-demo-stats==1.0.0']);
    assert.equal(again.built, false);
    assert.equal(again.id, image.id);
  });

  it('a requirement that does not exist names the setting and the package; pip says why in the log', async function () {
    this.timeout(300_000);
    await assert.rejects(build(['codeact-no-such-package']), (e: unknown) => {
      assert.ok(e instanceof RequirementRejectedError, String(e));
      assert.equal(e.requirement, 'codeact-no-such-package');
      assert.equal(
        e.modelMessage,
        'pip found no package matching "codeact-no-such-package" from the codeactSandbox.pythonPackages setting, so the sandbox image with it could not be built and the program was not run. Ask the user to correct or remove that entry (pip\'s output is in the CodeAct Sandbox output channel).',
      );
      return true;
    });
    assert.match(recentLog(200), /packages image build: ERROR: No matching distribution found for codeact-no-such-package/);
    assert.equal((await dockerCli('images', '-q', REPOSITORY)).trim().split('\n').filter(Boolean).length, 1, 'only the image of the first test');
  });

  it('an entry that is not a requirement is refused before anything is built', async function () {
    await assert.rejects(build(['--index-url=http://elsewhere.invalid/simple']), (e: unknown) => {
      assert.ok(e instanceof ImageBuildError);
      assert.equal(e.code, 'invalid_settings');
      assert.equal(
        e.modelMessage,
        'The entry "--index-url=http://elsewhere.invalid/simple" of the codeactSandbox.pythonPackages setting is not a pip requirement, so the program was not run. Ask the user to write it as a package name, optionally with a version (for example "requests==2.32.3").',
      );
      return true;
    });
  });

  it('no requirements: the data image itself', async function () {
    const image = await build([]);
    assert.deepEqual([image.tag, image.id, image.built], [made.image.tag, made.image.id, false]);
  });
});
