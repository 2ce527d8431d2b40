import * as assert from 'node:assert/strict';
import type Dockerode from 'dockerode';
import { engineStateOf } from '../../src/docker/engine/state';
import { ToolError } from '../../src/core/errors';
import { createDockerClient, resolveEngine } from '../../src/docker/engine/connection';
import { EngineTimeoutError, engineFailure, engineRefused, isEngineFailure, isNameTaken, isUnreachable, readEngine } from '../../src/docker/engine/errors';
import { engineIdentity, identifyFromPing } from '../../src/docker/engine/identity';
import { sandboxFailed } from '../../src/docker/container/errors';
import { stoppedExit } from '../../src/docker/run/stopped';

/** A client whose engine answers a ping with these headers, and `version` with `version`; nothing else is asked. */
function fakeEngine(headers: Record<string, string>, version?: () => Promise<unknown>): Dockerode & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    modem: {
      dial: (o: { path: string }, cb: (err: unknown, res: unknown) => void) => {
        asked.push(o.path);
        cb(null, { headers, resume: () => {} });
      },
    },
    version: () => {
      asked.push('version');
      return version ? version() : Promise.reject(new Error('not asked for in this test'));
    },
  } as unknown as Dockerode & { asked: string[] };
}

const PODMAN_PING = { 'api-version': '1.41', 'libpod-api-version': '4.3.1', server: 'Libpod/4.3.1 (linux)' };
const DOCKER_PING = { 'api-version': '1.41', ostype: 'linux', server: 'Docker/28.2.2 (linux)' };

/** A client whose engine has already said what it is. */
async function engineThatSaid(headers: Record<string, string>): Promise<Dockerode> {
  const docker = fakeEngine(headers);
  await engineIdentity(docker);
  return docker;
}

function failure(code: string): Error {
  return Object.assign(new Error(`connect ${code} /run/engine.sock`), { code });
}

describe('a busy engine is not an unreachable engine (unit)', function () {
  it('an engine that did not answer in time is busy, named as it named itself, with what it was asked', async function () {
    const podman = await engineThatSaid(PODMAN_PING);
    const e = engineFailure(new EngineTimeoutError('its runtimes (info)', 90_000), podman);
    assert.equal(e.code, 'engine_busy');
    assert.equal(
      e.modelMessage,
      'The Podman 4.3.1 engine did not answer within 90 s when asked for its runtimes (info), so the program was not run. The engine is running but busy or stuck: try again in a moment; if it keeps happening, ask the user to check the Podman service and what else is using it.',
    );
    assert.equal(isEngineFailure(e.cause), true);
    assert.equal(isUnreachable(e.cause), false);
  });

  it('before a remote engine has said what it is, a timeout names its address', function () {
    const docker = createDockerClient(resolveEngine({ host: 'tcp://127.0.0.1:23750' }));
    assert.equal(
      engineFailure(new EngineTimeoutError('a ping', 90_000), docker).modelMessage,
      'The container engine at tcp://127.0.0.1:23750 did not answer within 90 s when asked for a ping, so the program was not run. The engine is running but busy or stuck: try again in a moment; if it keeps happening, ask the user to check the engine and what else is using it.',
    );
  });

  it('before the engine has said what it is, a timeout names no product', function () {
    const e = engineFailure(new EngineTimeoutError('its version', 90_000));
    assert.equal(
      e.modelMessage,
      'The container engine did not answer within 90 s when asked for its version, so the program was not run. The engine is running but busy or stuck: try again in a moment; if it keeps happening, ask the user to check the engine and what else is using it.',
    );
  });

  it('no engine at the address: a Podman service that answered before is not called Docker', async function () {
    const podman = await engineThatSaid(PODMAN_PING);
    const e = engineFailure(failure('ECONNREFUSED'), podman);
    assert.equal(e.code, 'engine_unreachable');
    assert.equal(
      e.modelMessage,
      'The local Podman engine (Podman 4.3.1) is not reachable, so the program was not run. Ask the user to start the Podman service (podman system service, or Podman Desktop) or to check the engine connection settings, then try again.',
    );
    assert.equal(
      engineFailure(failure('ENOENT')).modelMessage,
      'Docker is not reachable, so the program was not run. Ask the user to start Docker (Docker Desktop or the docker service) or to check the Docker connection settings, then try again.',
    );
  });

  it('a socket that refuses this user gets its own sentence, and a state of its own for the person', function () {
    assert.equal(
      engineFailure(failure('EACCES')).modelMessage,
      "The Docker engine refused this user (permission denied on its socket), so the program was not run. Ask the user to add their account to the docker group (sudo usermod -aG docker $USER, then log out and in again), or to point the engine connection (DOCKER_HOST, a Docker context, or this tool's engine settings) at an engine this user may use, such as rootless Docker or Podman.",
    );
    const local = { local: true, cliFound: true };
    assert.equal(engineStateOf(failure('EACCES'), local), 'denied');
    assert.equal(engineStateOf(engineFailure(failure('EACCES')), local), 'denied', 'through the ToolError that wraps it');
    assert.equal(engineStateOf(failure('ECONNREFUSED'), local), 'unreachable');
    assert.equal(engineStateOf(failure('ENOENT'), local), 'unreachable');
    assert.equal(engineStateOf(new EngineTimeoutError('its version', 90_000), local), 'unreachable');
    // No socket, and neither docker nor podman installed: no engine at all.
    assert.equal(engineStateOf(failure('ENOENT'), { local: true, cliFound: false }), 'none');
    assert.equal(engineStateOf(failure('ENOENT'), { local: false, cliFound: false }), 'unreachable');
    // Not an engine failure: says nothing about the engine.
    assert.equal(engineStateOf(new ToolError('invalid_input', 'No code.'), local), undefined);
  });

  it('an engine that answered with an error says so, and each client names its own log', async function () {
    const docker = await engineThatSaid(DOCKER_PING);
    const e = engineRefused(Object.assign(new Error('(HTTP code 500) server error'), { statusCode: 500 }), docker, 'its version and runtimes');
    assert.equal(e.code, 'sandbox_failed');
    assert.equal(e.messageFor('vscode'), 'The Docker 28.2.2 engine answered the request for its version and runtimes with an error (HTTP 500), so the program was not run. Ask the user to check the "CodeAct Sandbox" output channel.');
    assert.equal(e.messageFor('cli'), 'The Docker 28.2.2 engine answered the request for its version and runtimes with an error (HTTP 500), so the program was not run. Run the command again with --verbose to see the details.');
    assert.equal(
      sandboxFailed().messageFor('mcp'),
      "The sandbox could not be created. Ask the user to check the CodeAct Sandbox server's log (its standard error).",
    );
    assert.equal(new ToolError('invalid_input', 'No code.').messageFor('cli'), 'No code.');
  });
});

describe('read-only engine calls (unit)', function () {
  it('are tried once more after a dropped connection or a 5xx, and give up after the second', async function () {
    for (const first of [failure('ECONNRESET'), Object.assign(new Error('busy'), { statusCode: 503 })]) {
      let asked = 0;
      const answer = await readEngine(async () => {
        asked++;
        if (asked === 1) throw first;
        return 'info';
      }, 'its info');
      assert.deepEqual([answer, asked], ['info', 2]);
    }
    let asked = 0;
    await assert.rejects(
      readEngine(async () => {
        asked++;
        throw failure('ECONNRESET');
      }, 'its info'),
      { code: 'ECONNRESET' },
    );
    assert.equal(asked, 2);
  });

  it('are not tried again after a 4xx, a refused connection or the deadline', async function () {
    for (const error of [Object.assign(new Error('no such container'), { statusCode: 404 }), failure('ECONNREFUSED')]) {
      let asked = 0;
      await assert.rejects(
        readEngine(async () => {
          asked++;
          throw error;
        }, 'a container (inspect)'),
        error,
      );
      assert.equal(asked, 1);
    }
    let asked = 0;
    await assert.rejects(
      readEngine(
        () => {
          asked++;
          return new Promise<never>(() => {});
        },
        'its version',
        20,
      ),
      (e: unknown) => e instanceof EngineTimeoutError && e.what === 'its version' && e.ms === 20,
    );
    assert.equal(asked, 1);
  });

  it('concurrent callers of one client share one question', async function () {
    let answer: (headers: Record<string, string>) => void = () => {};
    let asked = 0;
    const docker = {
      modem: {
        dial: (_o: unknown, cb: (err: unknown, res: unknown) => void) => {
          asked++;
          answer = (headers) => cb(null, { headers, resume: () => {} });
        },
      },
    } as unknown as Dockerode;
    const all = Promise.all(Array.from({ length: 10 }, () => engineIdentity(docker)));
    answer(PODMAN_PING);
    const identities = await all;
    assert.equal(asked, 1);
    assert.deepEqual(new Set(identities.map((i) => i.label)), new Set(['Podman 4.3.1']));
  });
});

describe('which engine answered (unit)', function () {
  it("a ping's headers say it (the headers of Podman 4.3.1 and Docker 28.2.2), without asking for the version", async function () {
    assert.deepEqual(identifyFromPing(PODMAN_PING), { kind: 'podman', version: '4.3.1', label: 'Podman 4.3.1' });
    assert.deepEqual(identifyFromPing(DOCKER_PING), { kind: 'docker', version: '28.2.2', label: 'Docker 28.2.2' });
    const podman = fakeEngine(PODMAN_PING);
    assert.equal((await engineIdentity(podman)).label, 'Podman 4.3.1');
    assert.deepEqual(podman.asked, ['/_ping']);
  });

  it('where the headers do not say (a proxy in between), the version is asked', async function () {
    const proxied = fakeEngine({ server: 'nginx' }, async () => ({ Version: '4.3.1', Components: [{ Name: 'Podman Engine', Version: '4.3.1' }] }));
    assert.equal((await engineIdentity(proxied)).label, 'Podman 4.3.1');
    assert.deepEqual(proxied.asked, ['/_ping', 'version']);
  });
});

describe('a name another container has (unit)', function () {
  it("is Docker's 409, and Podman's 500 with either of its own wordings (as Podman 4.3.1 answered creates that lost the race)", function () {
    const podman = Object.assign(
      new Error(
        '(HTTP code 500) server error - container create: creating container storage: the container name "codeact-cli-2940bdf7028235e3" is already in use by 5064e39e748986fdf87cec2fe4985e4f56d994ce72327f3747d7f4dbd25c0c57. You have to remove that container to be able to reuse that name: that name is already in use ',
      ),
      { statusCode: 500 },
    );
    const podmanDatabase = Object.assign(new Error('(HTTP code 500) server error - container create: name "codeact-cli-67dd94f268b614a8" is in use: container already exists '), { statusCode: 500 });
    const otherInUse = Object.assign(new Error('(HTTP code 500) server error - volume is in use'), { statusCode: 500 });
    assert.deepEqual(
      [podman, podmanDatabase, Object.assign(new Error('Conflict. The container name is already in use'), { statusCode: 409 }), Object.assign(new Error('server error'), { statusCode: 500 }), otherInUse].map(isNameTaken),
      [true, true, true, false, false],
    );
  });
});

describe('a sandbox stopped from outside (unit)', function () {
  it('SIGTERM (143) under gVisor is the engine stopping it, not the program starting too much', function () {
    const exit = stoppedExit({ running: false, oomKilled: false, exitCode: 143 }, 'runsc', 256);
    assert.deepEqual(exit, {
      exitCode: null,
      notes: ['The sandbox was stopped from outside while the program ran (SIGTERM, as an engine stops or restarts a container); the program is not known to have caused it. Run it again: the next call gets a new sandbox.'],
    });
  });

  it("gVisor's own status 2 still points at processes and threads; the OOM flag at memory", function () {
    assert.deepEqual(stoppedExit({ running: false, oomKilled: false, exitCode: 2 }, 'runsc', 256).notes, [
      "The sandbox stopped while the program ran: gVisor's kernel ended with status 2, which most often means the program started more processes or threads than the sandbox can run (limit 256 processes). Start fewer; the next call gets a new sandbox.",
    ]);
    assert.equal(stoppedExit({ running: false, oomKilled: true, exitCode: 143 }, 'runsc', 256).oomKilled, true);
  });
});
