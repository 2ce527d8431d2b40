import * as assert from 'node:assert/strict';
import { PassThrough, type Writable } from 'node:stream';
import type Dockerode from 'dockerode';
import { runActivity } from '../../../src/docker/network/runActivity';
import { LOG_TAG, MARK_DOMAIN } from '../../../src/docker/network/squidConfig';

const CLIENT = '172.30.0.2';
const EGRESS = { digest: 'd', network: 'n', proxyName: 'proxy', proxyAddress: '172.30.0.3' };

/**
 * An engine whose proxy log and marker exec the test drives: the marker's nonce is read from the
 * program the exec was given, as the proxy would log it.
 */
function engine() {
  const log = new PassThrough();
  const marker = new PassThrough();
  let nonce: string | undefined;
  const docker = {
    getContainer: () => ({ logs: async () => log }),
    modem: { demuxStream: (s: NodeJS.ReadableStream, out: Writable) => s.pipe(out) },
  } as unknown as Dockerode;
  const sandbox = {
    exec: async (o: { Cmd: string[] }) => {
      nonce = /m-([0-9a-f]+)\./.exec(o.Cmd.at(-1)!)![1];
      return { start: async () => marker };
    },
  } as unknown as Dockerode.Container;
  const markLine = () => `${LOG_TAG} 1700000000.000 ${CLIENT} 40000 GET m-${nonce}.${MARK_DOMAIN} 80 - 0 0 TCP_DENIED mark - - -\n`;
  return { docker, sandbox, log, marker, markLine, sent: () => nonce !== undefined };
}

describe('a call’s network record', function () {
  it('is answered only once the marker the sandbox ran has ended, not when its line is logged', async function () {
    const e = engine();
    let answered = false;
    const answer = runActivity(e.docker, e.sandbox, EGRESS, CLIENT, { since: Date.now(), previous: undefined, spare: [] }).then((r) => {
      answered = true;
      return r;
    });
    while (!e.sent()) await new Promise((r) => setImmediate(r));
    e.log.write(e.markLine());
    // Its line is in, but the marker (a process of the sandbox's user) is still exiting: a
    // session call started now would find it and could not keep its state.
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    assert.equal(answered, false);
    e.marker.end();
    const { activity, mark } = await answer;
    assert.deepEqual([activity.complete, activity.connections.length, mark?.time], [true, 0, 1700000000000]);
  });
});
