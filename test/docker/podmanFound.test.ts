// A person whose Docker does not answer and whose Podman does: Podman is found where Podman's own
// tools look, on the real Podman service (scripts/ensure-podman.sh), and a Docker engine there is not.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { findPodman } from '../../src/docker/engine/state';

const PODMAN_SERVICE = '/run/codeact-podman/podman.sock';
const DOCKER_SOCKET = '/var/run/docker.sock';

describe('Podman found where its tools look (integration)', function () {
  let runtime: string;
  beforeEach(function () {
    runtime = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-xdg-'));
  });
  afterEach(function () {
    fs.rmSync(runtime, { recursive: true, force: true });
  });

  it("answers at $XDG_RUNTIME_DIR/podman/podman.sock, named by its own ping, with the address as the setting holds it", async function () {
    if (!fs.existsSync(PODMAN_SERVICE)) this.skip();
    fs.mkdirSync(path.join(runtime, 'podman'));
    fs.symlinkSync(PODMAN_SERVICE, path.join(runtime, 'podman', 'podman.sock'));
    const found = await findPodman({ env: { XDG_RUNTIME_DIR: runtime }, platform: 'linux', home: runtime, exists: (f) => f.startsWith(runtime) && fs.existsSync(f) });
    assert.ok(found, 'Podman found');
    assert.equal(found.identity.kind, 'podman');
    assert.match(found.identity.label, /^Podman \d+\.\d+\.\d+$/);
    assert.deepEqual(found.candidate, {
      address: `unix://${runtime}/podman/podman.sock`,
      setting: 'unix://$XDG_RUNTIME_DIR/podman/podman.sock',
      why: 'rootless Podman',
    });
  });

  it('does not offer a Docker engine that answers where Podman would be, nor a socket nobody listens at', async function () {
    if (!fs.existsSync(DOCKER_SOCKET)) this.skip();
    fs.mkdirSync(path.join(runtime, 'podman'));
    fs.symlinkSync(DOCKER_SOCKET, path.join(runtime, 'podman', 'podman.sock'));
    const only = (f: string) => f.startsWith(runtime) && fs.existsSync(f);
    assert.equal(await findPodman({ env: { XDG_RUNTIME_DIR: runtime }, platform: 'linux', home: runtime, exists: only }), undefined);
    fs.rmSync(path.join(runtime, 'podman', 'podman.sock'));
    assert.equal(await findPodman({ env: { XDG_RUNTIME_DIR: runtime }, platform: 'linux', home: runtime, exists: only }), undefined);
  });
});
