import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { sessionDigest } from '../../src/core/session';
import { executeToolCall } from '../../src/core/toolCall';
import type { SandboxSpec } from '../../src/docker/container/spec';
import type { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { LABEL } from '../../src/docker/container/labels';
import { ArtifactStore, type RunWriter } from '../../src/storage/artifactStore';
import { IMAGE, TEST_LIMITS, WAITING_TEST_MS, containersWith, dockerCli, exists, gate, log, programRunning, recentLog, runLimits, uniqueSessionKey, useDocker, waitFor } from './helpers';

const MB = 1024 * 1024;
const REPLACED = 'The sandbox had stopped and was replaced; files written by earlier calls are gone.';
const SAVED_TAIL = 'The files are not sent to you; describe them or print what you need from them.';

describe('sandbox provider: replacement, settings changes, pre-warming (integration)', function () {
  this.timeout(WAITING_TEST_MS);
  const sandboxes = useDocker();
  let store: ArtifactStore;

  before(function () {
    store = new ArtifactStore(fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-store-')));
  });
  after(function () {
    fs.rmSync(store.root, { recursive: true, force: true });
  });

  /** One tool call that declares `outputs`, recorded in the store like the extension records it. */
  async function call(provider: DockerSandboxProvider, sessionKey: string, code: string, outputs: string[] = []) {
    let writer: RunWriter | undefined;
    const result = await executeToolCall(provider, log, { code, ...(outputs.length ? { outputs } : {}) }, {
      sessionKey,
      limits: runLimits(),
      memoryMb: TEST_LIMITS.memoryMb,
      filesIn: { source: undefined, caps: { denyGlobs: [], maxFiles: 0, maxFileBytes: 0, maxTotalBytes: 0 } },
      filesOut: { mode: 'declared', caps: { maxFiles: 5, maxFileBytes: MB, maxTotalBytes: MB }, savedWhere: 'in the CodeAct Sandbox view' },
      record: () => {
        const w = store.beginRun(sessionDigest(sessionKey), 'test');
        writer = w;
        return { dir: w.dir, addFile: (n, b, s) => w.addFile(n, b as Readable, s), finish: (o) => w.finish(o), discard: () => w.discard() };
      },
    });
    return { ...result, record: store.readRun(writer!.sessionDigest, writer!.runId)! };
  }

  it('collects the outputs from the sandbox that replaced a vanished one, and records its id', async function () {
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey('replaced');
    await call(provider, key, 'print("first")');
    const old = provider.active.get(key)!.id;
    await dockerCli('rm', '-f', old);

    const r = await call(provider, key, 'open("out.txt", "w").write("hi")\nprint("second")', ['out.txt']);
    const fresh = provider.active.get(key)!.id;
    assert.notEqual(fresh, old);
    assert.equal(r.report.text, `stdout:\nsecond\n\n${REPLACED}\n\nSaved for the user in the CodeAct Sandbox view: out.txt (2 B). ${SAVED_TAIL}`);
    assert.deepEqual(r.files, [{ name: 'out.txt', size: 2 }]);
    assert.equal(r.report.sandboxId, fresh);
    assert.equal(r.record.sandboxId, fresh);
  });

  it('a sandbox whose settings changed while a call held it is removed when that call ends', async function () {
    let limits = { ...TEST_LIMITS };
    const provider = sandboxes.makeProvider({ spec: () => ({ image: IMAGE, limits }) });
    const key = uniqueSessionKey('settings');
    await call(provider, key, 'print("warm")');
    const old = provider.active.get(key)!.id;

    // The slow call holds the old sandbox until the test opens its gate.
    const held = gate();
    const slow = call(provider, key, `${held.wait}\nopen("late.txt", "w").write("late")\nprint("slow done")`, ['late.txt']);
    await programRunning(old);
    limits = { ...limits, memoryMb: limits.memoryMb + 32 };
    const quick = await call(provider, key, 'print("new settings")');
    const fresh = provider.active.get(key)!.id;
    assert.notEqual(fresh, old);
    assert.equal(quick.report.text, 'stdout:\nnew settings');
    // The old sandbox is still held: it finishes its call, outputs included, and then goes.
    assert.equal(await exists(old), true);
    assert.equal(provider.retiringCount, 1);

    await held.open(old);
    const r = await slow;
    assert.equal(r.report.text, `stdout:\nslow done\n\nSaved for the user in the CodeAct Sandbox view: late.txt (4 B). ${SAVED_TAIL}`);
    assert.equal(r.report.sandboxId, old);
    assert.equal(await exists(old), false);
    assert.equal(provider.retiringCount, 0);
    assert.deepEqual(await containersWith(`${LABEL.session}=${sessionDigest(key)}`), [fresh]);
  });

  describe('pre-warming never asks, builds or pulls', function () {
    it('creates nothing and pulls nothing for an image that is not on the engine', async function () {
      let pulls = 0;
      const missing = `codeact-sandbox/not-here:${Date.now()}`;
      const provider = sandboxes.makeProvider({
        image: missing,
        options: {
          onPull: async () => {
            pulls++;
          },
        },
      });
      const key = uniqueSessionKey('prewarm-missing');
      provider.prewarm(key);
      await waitFor(() => recentLog(200).includes(`not creating a sandbox ahead of time: ${missing} is not on the engine yet`), 'pre-warming to give up');
      assert.equal(pulls, 0);
      assert.equal(provider.active.size, 0);
      assert.deepEqual(await containersWith(`${LABEL.session}=${sessionDigest(key)}`), []);
    });

    it('uses the pre-warm spec (never the call spec) and creates nothing when it has none', async function () {
      let callSpecs = 0;
      let offer: SandboxSpec | undefined = undefined;
      const provider = sandboxes.makeProvider({
        spec: () => {
          callSpecs++;
          return { image: IMAGE, limits: TEST_LIMITS };
        },
        options: { prewarmSpec: async () => offer },
      });
      // Each pre-warm reads the offer when it starts: none for the first, one for the second.
      const none = uniqueSessionKey('prewarm-none');
      provider.prewarm(none);
      offer = { image: IMAGE, limits: TEST_LIMITS };
      const key = uniqueSessionKey('prewarm-offered');
      provider.prewarm(key);
      await waitFor(() => provider.active.has(key), 'the offered pre-warm to create its sandbox');
      // The first one, done long before (it had nothing to create), created nothing.
      assert.deepEqual([...provider.active.keys()], [key]);
      assert.equal(callSpecs, 0);
    });
  });
});
