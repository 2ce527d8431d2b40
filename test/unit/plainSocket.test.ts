import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { aheadOnEngine } from '../../src/docker/ahead';
import { plainUnixSocket } from '../../src/docker/engine/plainSocket';
import { resolveEngine } from '../../src/docker/engine';

/**
 * A command-line run guesses the engine's socket before the engine code is loaded, to ask for its
 * session's lock early; the guess is used only where resolveEngine (what every call uses) agrees.
 */
describe('the engine socket guessed before the engine code loads (unit)', () => {
  let home: string;
  before(() => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-plain-'));
  });
  after(() => fs.rmSync(home, { recursive: true, force: true }));

  /** The guess for `env` with `config` as ~/.docker/config.json, and whether resolveEngine says the same engine. */
  const guess = (env: NodeJS.ProcessEnv, config?: string) => {
    const full = { HOME: home, ...env };
    const read = (file: string) => (file === path.join(home, '.docker', 'config.json') ? config : undefined);
    const socket = plainUnixSocket(full, 'linux', read);
    let agrees: boolean | undefined;
    if (socket !== undefined) agrees = aheadOnEngine({ socketPath: socket }, resolveEngine({}, full, 'linux', { readFile: read }), full);
    return { socket, agrees };
  };

  it('names the default socket, or DOCKER_HOST unix:// path, where resolveEngine names the same', () => {
    assert.deepEqual(guess({}), { socket: '/var/run/docker.sock', agrees: true });
    assert.deepEqual(guess({}, '{"auths": {}}'), { socket: '/var/run/docker.sock', agrees: true });
    assert.deepEqual(guess({}, '{"currentContext": "default"}'), { socket: '/var/run/docker.sock', agrees: true });
    assert.deepEqual(guess({}, '{"currentContext": ""}'), { socket: '/var/run/docker.sock', agrees: true });
    assert.deepEqual(guess({ DOCKER_CONTEXT: 'default' }, '{"currentContext": "remote"}'), { socket: '/var/run/docker.sock', agrees: true });
    assert.deepEqual(guess({ DOCKER_HOST: 'unix:///run/podman/podman.sock' }), { socket: '/run/podman/podman.sock', agrees: true });
    // DOCKER_HOST comes before the config's current context, as for the docker CLI.
    assert.deepEqual(guess({ DOCKER_HOST: 'unix:///run/x.sock' }, '{"currentContext": "remote"}'), { socket: '/run/x.sock', agrees: true });
  });

  it('guesses nothing where a context, another scheme or an unreadable config decides', () => {
    assert.deepEqual(guess({}, '{"currentContext": "remote"}'), { socket: undefined, agrees: undefined });
    assert.deepEqual(guess({}, '{"currentContext": 3}'), { socket: undefined, agrees: undefined });
    assert.deepEqual(guess({}, 'not json'), { socket: undefined, agrees: undefined });
    assert.deepEqual(guess({ DOCKER_CONTEXT: 'remote' }), { socket: undefined, agrees: undefined });
    assert.deepEqual(guess({ DOCKER_HOST: 'tcp://127.0.0.1:2375' }), { socket: undefined, agrees: undefined });
    assert.deepEqual(guess({ DOCKER_HOST: 'ssh://me@host' }), { socket: undefined, agrees: undefined });
    assert.deepEqual(guess({ DOCKER_HOST: 'unix://relative.sock' }), { socket: undefined, agrees: undefined });
    assert.equal(plainUnixSocket({ HOME: home }, 'win32', () => undefined), undefined);
  });

  it('a guess is not used on an engine resolved otherwise', () => {
    const env = { HOME: home };
    assert.equal(aheadOnEngine({ socketPath: '/var/run/docker.sock' }, resolveEngine({ host: 'unix:///run/other.sock' }, env, 'linux'), env), false);
    assert.equal(aheadOnEngine({ socketPath: '/var/run/docker.sock' }, resolveEngine({ host: 'tcp://127.0.0.1:2375' }, env, 'linux'), env), false);
    assert.equal(aheadOnEngine({ socketPath: '/run/other.sock' }, resolveEngine({ host: 'unix:///run/other.sock' }, env, 'linux'), env), true);
  });
});
