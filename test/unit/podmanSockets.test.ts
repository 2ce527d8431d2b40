import * as assert from 'node:assert/strict';
import { expandSocketAddress, podmanCandidates } from '../../src/docker/engine/podmanSockets';
import { resolveEngine } from '../../src/docker/engine/resolve';

describe("Podman where Podman's own tools look (unit)", () => {
  it('Linux: CONTAINER_HOST, then the rootless socket under the runtime folder, then the rootful one', () => {
    assert.deepEqual(podmanCandidates({ XDG_RUNTIME_DIR: '/run/user/1000', CONTAINER_HOST: 'unix:///srv/podman.sock' }, 'linux', '/home/me'), [
      { address: 'unix:///srv/podman.sock', setting: 'unix:///srv/podman.sock', why: 'CONTAINER_HOST' },
      { address: 'unix:///run/user/1000/podman/podman.sock', setting: 'unix://$XDG_RUNTIME_DIR/podman/podman.sock', why: 'rootless Podman' },
      { address: 'unix:///run/podman/podman.sock', setting: 'unix:///run/podman/podman.sock', why: 'rootful Podman' },
    ]);
    // Without XDG_RUNTIME_DIR, Podman takes /run/user/UID; an ssh:// CONTAINER_HOST needs Podman's identity files: not tried.
    assert.deepEqual(
      podmanCandidates({ CONTAINER_HOST: 'ssh://core@127.0.0.1:2222/run/podman/podman.sock' }, 'linux', '/home/me', 1001).map((c) => c.address),
      ['unix:///run/user/1001/podman/podman.sock', 'unix:///run/podman/podman.sock'],
    );
  });

  it("macOS: the API socket podman machine forwards (Podman 5 in TMPDIR, Podman 4 under the machine's folder); Windows: the machine's pipe", () => {
    assert.deepEqual(
      podmanCandidates({ TMPDIR: '/var/folders/7b/T/' }, 'darwin', '/Users/me').map((c) => [c.address, c.setting]),
      [
        ['unix:///var/folders/7b/T/podman/podman-machine-default-api.sock', 'unix:///var/folders/7b/T/podman/podman-machine-default-api.sock'],
        ['unix:///Users/me/.local/share/containers/podman/machine/podman-machine-default/podman.sock', 'unix://~/.local/share/containers/podman/machine/podman-machine-default/podman.sock'],
        ['unix:///Users/me/.local/share/containers/podman/machine/qemu/podman.sock', 'unix://~/.local/share/containers/podman/machine/qemu/podman.sock'],
      ],
    );
    assert.deepEqual(podmanCandidates({}, 'win32', 'C:\\Users\\me').map((c) => c.address), ['npipe:////./pipe/podman-machine-default']);
  });

  it('expands ~, $XDG_RUNTIME_DIR and $HOME in a unix:// engine address of the settings, and nothing in another machine\'s address', () => {
    const env = { XDG_RUNTIME_DIR: '/run/user/1000' };
    assert.equal(expandSocketAddress('unix://$XDG_RUNTIME_DIR/podman/podman.sock', env, '/home/me'), 'unix:///run/user/1000/podman/podman.sock');
    assert.equal(expandSocketAddress('unix://${XDG_RUNTIME_DIR}/podman/podman.sock', env, '/home/me'), 'unix:///run/user/1000/podman/podman.sock');
    assert.equal(expandSocketAddress('unix://~/.colima/default/docker.sock', env, '/home/me'), 'unix:///home/me/.colima/default/docker.sock');
    assert.equal(expandSocketAddress('unix://$HOME/x.sock', env, '/home/me'), 'unix:///home/me/x.sock');
    assert.equal(expandSocketAddress('unix://$XDG_RUNTIME_DIRX/a.sock', env, '/home/me'), 'unix://$XDG_RUNTIME_DIRX/a.sock');
    assert.equal(expandSocketAddress('unix://$XDG_RUNTIME_DIR/podman/podman.sock', {}, '/home/me', 1001), 'unix:///run/user/1001/podman/podman.sock');
    assert.equal(expandSocketAddress('ssh://me@$HOST', env, '/home/me'), 'ssh://me@$HOST');
    // Through the resolution of the setting (it was taken literally: a socket named "$XDG_RUNTIME_DIR").
    const t = resolveEngine({ host: 'unix://$XDG_RUNTIME_DIR/podman/podman.sock' }, { ...env, HOME: '/home/me' }, 'linux', { readFile: () => undefined });
    assert.equal(t.socketPath, '/run/user/1000/podman/podman.sock');
    // DOCKER_HOST came through a shell, which expanded what it meant to: it is taken as it is.
    const fromEnv = resolveEngine({}, { DOCKER_HOST: 'unix://~/docker.sock', HOME: '/home/me' }, 'linux', { readFile: () => undefined });
    assert.equal(fromEnv.socketPath, '~/docker.sock');
  });
});
