import * as assert from 'node:assert/strict';
import type Dockerode from 'dockerode';
import { BuildFailed } from '../../src/docker/images/build';
import { DEFAULT_HINTS } from '../../src/docker/images/dataImage';
import { rejected } from '../../src/docker/images/derivedImage';
import { RequirementRejectedError } from '../../src/docker/images/errors';
import { buildRunning, shareBuild, type StopReason } from '../../src/docker/images/sharedBuild';

/** Stands in for an engine only as a key: shareBuild never calls it. */
const engine = () => ({}) as Dockerode;
const waitCancelled = () => new Error('wait cancelled');

/** A build that resolves when told to, or rejects with why it was stopped. */
function controllable() {
  let starts = 0;
  let finish: (v: string) => void = () => {};
  const start = (signal: AbortSignal, emit: (p: { phase: 'installing-packages'; message: string }) => void, stopped: () => StopReason | undefined) => {
    starts++;
    emit({ phase: 'installing-packages', message: 'working' });
    return new Promise<string>((resolve, reject) => {
      finish = resolve;
      if (signal.aborted) reject(new Error(`stopped: ${stopped()}`));
      signal.addEventListener('abort', () => reject(new Error(`stopped: ${stopped()}`)), { once: true });
    });
  };
  return { start, finish: (v: string) => finish(v), starts: () => starts };
}

describe('shared image builds (unit)', () => {
  it('concurrent callers share one build and each sees its progress', async () => {
    const docker = engine();
    const b = controllable();
    const seen: string[] = [];
    const one = shareBuild(docker, 'k', { timeoutMs: 10_000, onProgress: (p) => seen.push(`1 ${p.message}`) }, b.start, waitCancelled);
    const two = shareBuild(docker, 'k', { timeoutMs: 10_000, onProgress: (p) => seen.push(`2 ${p.message}`) }, b.start, waitCancelled);
    await new Promise((r) => setImmediate(r));
    assert.equal(buildRunning(docker, 'k'), true);
    b.finish('image');
    assert.deepEqual(await Promise.all([one, two]), ['image', 'image']);
    assert.equal(b.starts(), 1);
    assert.deepEqual(seen.sort(), ['1 working', '2 working']);
    assert.equal(buildRunning(docker, 'k'), false);
  });

  it("a caller's own signal ends its wait only; a build signal stops it for everyone", async () => {
    const docker = engine();
    const b = controllable();
    const stop = new AbortController();
    const cancelBuild = new AbortController();
    const waiting = shareBuild(docker, 'k', { timeoutMs: 10_000, signal: stop.signal, buildSignal: cancelBuild.signal }, b.start, waitCancelled);
    const other = shareBuild(docker, 'k', { timeoutMs: 10_000 }, b.start, waitCancelled);
    stop.abort();
    await assert.rejects(waiting, /wait cancelled/);
    assert.equal(buildRunning(docker, 'k'), true);
    cancelBuild.abort();
    await assert.rejects(other, /stopped: cancelled/);
  });

  it('without a build signal the caller signal stops the build; the deadline stops it too', async () => {
    const docker = engine();
    const ctl = new AbortController();
    const p = shareBuild(docker, 'a', { timeoutMs: 10_000, signal: ctl.signal }, controllable().start, waitCancelled);
    ctl.abort();
    await assert.rejects(p, /stopped: cancelled/);
    await assert.rejects(shareBuild(docker, 'b', { timeoutMs: 20 }, controllable().start, waitCancelled), /stopped: timeout/);
  });
});

describe('what pip rejected (unit)', () => {
  const hints = { ...DEFAULT_HINTS, packagesSetting: 'the codeactSandbox.pythonPackages setting' };
  const failed = (...tail: string[]) => new BuildFailed("The command 'python3 -m pip install ...' returned a non-zero code: 1", tail);

  it('names the entry pip found nothing for, as the user wrote it', () => {
    const e = rejected(
      failed('ERROR: Could not find a version that satisfies the requirement No_Such-pkg>=1 (from versions: none)', 'ERROR: No matching distribution found for No_Such-pkg>=1'),
      ['attrs', 'no_such_pkg >= 1'],
      hints,
    );
    assert.ok(e instanceof RequirementRejectedError);
    assert.equal(e.requirement, 'no_such_pkg >= 1');
    assert.equal(
      e.modelMessage,
      'pip found no package matching "no_such_pkg >= 1" from the codeactSandbox.pythonPackages setting, so the sandbox image with it could not be built and the program was not run. Ask the user to correct or remove that entry (pip\'s output is in the CodeAct Sandbox output channel).',
    );
    assert.equal(e.userMessage, 'pip found no package matching "no_such_pkg >= 1" (the codeactSandbox.pythonPackages setting). Pip\'s output is in the CodeAct Sandbox output channel.');
  });

  it('tells an index that cannot be reached from other failures', () => {
    const offline = rejected(failed("WARNING: Retrying ... NewConnectionError('Failed to establish a new connection: [Errno 111] Connection refused')", 'ERROR: No matching distribution found for attrs'), ['attrs'], hints);
    assert.equal(
      offline.modelMessage,
      "The packages in the codeactSandbox.pythonPackages setting could not be installed because the build could not reach the package index, so the program was not run. Ask the user to check the network of the Docker engine (pip's output is in the CodeAct Sandbox output channel).",
    );
    const other = rejected(failed('error: subprocess-exited-with-error'), ['a', 'b'], hints);
    assert.equal(
      other.modelMessage,
      'pip could not install "a", "b" from the codeactSandbox.pythonPackages setting, so the sandbox image with them could not be built and the program was not run. Ask the user to look at pip\'s output in the CodeAct Sandbox output channel and to correct that setting.',
    );
  });
});
