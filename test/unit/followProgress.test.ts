import * as assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import Dockerode from 'dockerode';
import { followProgress, type ProgressEvent } from '../../src/docker/engine/progress';

/** dockerode's own modem reads the stream; no engine is asked (the client is never connected). */
describe('followProgress (unit)', () => {
  const docker = new Dockerode({ socketPath: '/nonexistent/docker.sock' });
  const streamOf = (...lines: object[]) => {
    const stream = new PassThrough();
    for (const line of lines) stream.write(JSON.stringify(line) + '\n');
    return stream;
  };

  it('hands each event over as it comes and resolves with all of them at the end', async () => {
    const stream = streamOf({ id: 'a', status: 'Downloading', progressDetail: { current: 1, total: 2 } }, { status: 'Done' });
    const seen: ProgressEvent[] = [];
    const done = followProgress(docker, stream, { onEvent: (e) => seen.push(e) });
    stream.end();
    const events = await done;
    assert.deepEqual(events, [{ id: 'a', status: 'Downloading', progressDetail: { current: 1, total: 2 } }, { status: 'Done' }]);
    assert.deepEqual(seen, events);
  });

  it('rejects with the error an event carries, unless the caller reads errors itself', async () => {
    const failing = () => streamOf({ status: 'x' }, { error: 'manifest unknown', errorDetail: { message: 'manifest unknown' } });
    const s1 = failing();
    const rejected = followProgress(docker, s1);
    s1.end();
    await assert.rejects(rejected, { message: 'manifest unknown' });
    const s2 = failing();
    const resolved = followProgress(docker, s2, { failOnErrorEvent: false });
    s2.end();
    assert.deepEqual((await resolved).map((e) => e.error ?? e.status), ['x', 'manifest unknown']);
  });

  it('an abort destroys the stream and rejects with the caller\'s words', async () => {
    const stream = streamOf({ status: 'Downloading' });
    const abort = new AbortController();
    const waiting = followProgress(docker, stream, { signal: abort.signal, abortMessage: 'pull aborted' });
    abort.abort();
    await assert.rejects(waiting, { message: 'pull aborted' });
    assert.equal(stream.destroyed, true);
  });
});
