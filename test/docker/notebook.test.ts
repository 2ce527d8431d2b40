import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { IMAGE, bundleCli, spawnCli, useDocker, type CliResult } from './helpers';

/** Python with Jupyter's kernel and executor (scripts/ensure-test-image.sh --notebook). */
const NOTEBOOK_IMAGE = 'codeact-sandbox/python-notebook:bookworm';

/**
 * Runs the shared notebook top to bottom with Jupyter's own executor (nbclient and an ipykernel,
 * inside a sandbox: no network, read-only root) and prints each code cell's stdout. Cells tagged
 * raises-exception (the runs that failed) may raise; any other error fails the run.
 */
const EXECUTE = `
import json, os
os.environ["JUPYTER_RUNTIME_DIR"] = os.path.abspath("jupyter-runtime")
os.environ["HOME"] = os.getcwd()
os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
import nbformat
from nbclient import NotebookClient
nb = nbformat.read("session.ipynb", as_version=4)
NotebookClient(nb, kernel_name="python3", timeout=120).execute()
print(json.dumps(["".join(o.get("text", "") for o in c.outputs if o.get("output_type") == "stream" and o.get("name") == "stdout") for c in nb.cells if c.cell_type == "code"]))
`;

describe('notebook export (integration)', function () {
  useDocker();
  this.timeout(600_000);
  let dir: string;
  let cli: string;

  before(async function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-notebook-test-'));
    cli = await bundleCli(dir);
  });
  after(async function () {
    if (!dir) return;
    for (const session of ['nb-three', 'nb-kept', 'nb-named']) await runCli(['cleanup', '--session', session]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function runCli(args: string[], stdin?: string): Promise<CliResult> {
    return spawnCli(cli, args, { cwd: dir, env: process.env, ...(stdin !== undefined ? { stdin } : {}) });
  }

  /**
   * One session call; returns the stdout section of what the model received. Every call here
   * prints: a result without one is returned whole, with the run's log, for the assertion to show.
   */
  async function call(session: string, code: string): Promise<string> {
    const r = await runCli(['run', '--image', IMAGE, '--session', session, '--state', 'session', '--artifacts', 'art', '--preload', '', '--verbose', '-'], code);
    assert.equal(r.code, 0, r.stderr);
    return /^stdout:\n([\s\S]*?)(\n\n|$)/.exec(r.stdout)?.[1] ?? `no stdout in ${JSON.stringify(r.stdout)}; log: ${r.stderr}`;
  }

  /** Exports the session and runs the notebook in the notebook image; the stdout of each code cell. */
  async function reexecute(session: string, extra: string[] = []): Promise<string[]> {
    const ws = path.join(dir, `ws-${session}`);
    fs.mkdirSync(ws, { recursive: true });
    const exported = await runCli(['export', '--session', session, '--artifacts', 'art', '--out', path.join(ws, 'session.ipynb'), ...extra]);
    assert.equal(exported.code, 0, exported.stderr);
    const r = await runCli(['run', '--image', NOTEBOOK_IMAGE, '--workspace', ws, '--file', 'session.ipynb', '--preload', '', '--timeout', '300', '-'], EXECUTE);
    assert.equal(r.code, 0, r.stderr);
    const json = /^stdout:\n(.*)$/m.exec(r.stdout)?.[1];
    assert.ok(json, r.stdout);
    return (JSON.parse(json) as string[]).map((s) => s.replace(/\n$/, ''));
  }

  it("a session of three calls, one failing, runs again top to bottom in Jupyter with the same stdout", async function () {
    const original = [
      await call('nb-three', 'x = 41\nprint("x is", x)'),
      await call('nb-three', 'print(x)\n1/0'),
      await call('nb-three', 'x += 1\nprint(x)'),
    ];
    assert.deepEqual(original, ['x is 41', '41', '42']);
    assert.deepEqual(await reexecute('nb-three'), original);
  });

  it('--kept-state-only leaves out a failed call that changed the state first, so the rest runs as it did', async function () {
    const original = [
      await call('nb-kept', 'y = [1]\nprint(y)'),
      await call('nb-kept', 'y.append(2)\nprint(y)\n1/0'),
      await call('nb-kept', 'print(y)'),
    ];
    assert.deepEqual(original, ['[1]', '[1, 2]', '[1]']);
    // All of it: the failed cell's change stays in Jupyter's kernel, where the sandbox dropped it.
    assert.deepEqual(await reexecute('nb-kept'), ['[1]', '[1, 2]', '[1, 2]']);
    assert.deepEqual(await reexecute('nb-kept', ['--kept-state-only']), ['[1]', '[1]']);
  });

  it('export says which sessions there are when the named one has no runs, and exits 2', async function () {
    await call('nb-named', 'print(1)');
    const r = await runCli(['export', '--session', 'no-such', '--artifacts', 'art']);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^No session "no-such" has runs in .*\/art\. Sessions there: (session [a-z-]+ \([0-9a-f]{8}, \d runs?\)(, )?)+\.\n$/);
    assert.ok(r.stderr.includes('session nb-named ('));
  });
});
