import * as assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { sessionDigest } from '../../src/core/session';
import { LABEL } from '../../src/docker/container/labels';
import { sharedSandboxName } from '../../src/docker/container';
import { IMAGE, SENTENCES, TEST_LABEL, bundleCli, containersWith, dockerCli, spawnCli, useDocker, volumesWith, type CliResult } from './helpers';


describe('the CLI (integration)', function () {
  useDocker();
  let dir: string;
  let cli: string;

  before(async function () {
    this.timeout(60_000);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-cli-test-'));
    cli = await bundleCli(dir);
  });
  after(function () {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  function runCli(args: string[], opts: { stdin?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
    return spawnCli(cli, args, { cwd: dir, env: { ...process.env, ...opts.env }, ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}) });
  }

  function program(name: string, code: string): string {
    const file = path.join(dir, name);
    fs.writeFileSync(file, code);
    return file;
  }

  const ours = async () => ({ containers: await containersWith(TEST_LABEL), volumes: await volumesWith(TEST_LABEL) });

  it("answers --help and a usage error from cli.js alone: the commands' file is read only when a command runs", async function () {
    const alone = path.join(dir, 'alone');
    fs.mkdirSync(alone);
    fs.copyFileSync(cli, path.join(alone, 'cli.js'));
    const spawnAlone = (args: string[]) => spawnCli(path.join(alone, 'cli.js'), args, { cwd: dir, env: process.env });
    const help = await spawnAlone(['--help']);
    assert.deepEqual([help.code, help.stdout.split('\n')[0], help.stderr], [0, 'usage:', '']);
    const usage = await spawnAlone(['run', '--frobnicate']);
    assert.deepEqual([usage.code, usage.stderr.split('\n')[0]], [2, 'codeact-sandbox: unknown option --frobnicate']);
    // A command needs the other file: without it, this copy cannot run one.
    const command = await spawnAlone(['cleanup']);
    assert.notEqual(command.code, 0);
    assert.match(command.stderr, /cli-commands\.mjs/);
  });

  it('prints exactly the model text and exits 0 even when the program exits 3', async function () {
    const before = await ours();
    const file = program('exit3.py', "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)\n");
    const r = await runCli(['run', '--image', IMAGE, file]);
    assert.equal(r.stderr, '');
    assert.equal(r.stdout, 'stdout:\nout\n\nstderr:\nerr\n\nexit code: 3\n');
    assert.equal(r.code, 0);
    // Without --session nothing is left behind.
    assert.deepEqual(await ours(), before);
  });

  it('reads the program from stdin with - and leaves nothing behind', async function () {
    const before = await ours();
    const r = await runCli(['run', '--image', IMAGE, '--timeout', '20', '-'], { stdin: 'print(6 * 7)\n' });
    assert.equal(r.stderr, '');
    assert.equal(r.stdout, 'stdout:\n42\n');
    assert.equal(r.code, 0);
    assert.deepEqual(await ours(), before);
  });

  it('prepare builds (or finds) the data image and says what it did; run without --image uses it', async function () {
    this.timeout(45 * 60_000); // a first build on a fresh machine takes minutes
    const prepared = await runCli(['prepare']);
    assert.equal(prepared.code, 0, prepared.stderr);
    assert.match(prepared.stdout, /^data image codeact-sandbox\/data:(pip|debian)-[0-9a-f]{16} \((pip|debian) route\): (already built|built in \d+\.\d s), \d+\.\d\d GB\n$/);
    const r = await runCli(['run', '-'], { stdin: 'import pandas as pd\nprint(pd.DataFrame({"a": [1, 2, 3]})["a"].sum())\n' });
    assert.equal(r.stdout, 'stdout:\n6\n');
    assert.equal(r.code, 0);
  });

  it('--packages is refused with an --image of the user\'s choice, and when it is not a requirement', async function () {
    const file = program('ok2.py', 'print(1)\n');
    const withImage = await runCli(['run', '--image', IMAGE, '--packages', 'polars', file]);
    assert.equal(withImage.code, 2);
    assert.ok(withImage.stderr.startsWith("codeact-sandbox: --packages adds to the data image; it does not apply to an --image of your choice\n"), withImage.stderr);
    const bad = await runCli(['prepare', '--packages', '--index-url=http://127.0.0.1/simple']);
    assert.equal(bad.code, 2);
    assert.ok(bad.stderr.startsWith('codeact-sandbox: --packages "--index-url=http://127.0.0.1/simple" is not a pip requirement'), bad.stderr);
  });

  it('--allow-domain gives the sandbox the proxy, says what a bad pattern is, and --verbose lists the connections', async function () {
    // The first test here to need the proxy's image builds it (apt, on a busy machine too).
    this.timeout(600_000);
    // Only a name that is not on the list is asked for: the proxy refuses it without resolving anything.
    const file = program(
      'net.py',
      [
        'import os, urllib.error, urllib.request',
        "print('proxy set:', os.environ['HTTPS_PROXY'].startswith('http://'))",
        'try:',
        "    urllib.request.urlopen('http://blocked.codeact.test/', timeout=20)",
        'except urllib.error.HTTPError as e:',
        "    print('HTTP', e.code)",
      ].join('\n'),
    );
    const r = await runCli(['run', '--image', IMAGE, '--runtime', 'runc', '--allow-domain', 'https://bad.codeact.test', '--allow-domain', 'allowed.codeact.test', '--verbose', file]);
    assert.equal(
      r.stdout,
      [
        'stdout:',
        'proxy set: True',
        'HTTP 403',
        '',
        'This sandbox has network access to these domains only: allowed.codeact.test, on ports 80 and 443, through a proxy that urllib, requests, pip and curl use by themselves (HTTP_PROXY and HTTPS_PROXY are set). Every other name is refused.',
        '',
        "The sandbox's network proxy blocked: blocked.codeact.test (not on the allow-list). If the program needs a name that is not on the allow-list, ask the user to add it to --allow-domain. Do not try to get around the proxy: nothing else leaves the sandbox.",
        '',
      ].join('\n'),
    );
    const lines = r.stderr.split('\n');
    assert.equal(lines[0], 'codeact-sandbox: --allow-domain: "https://bad.codeact.test" has a scheme (write the domain alone, as index.example.org); it is ignored.');
    const summary = lines.indexOf('network: 0 allowed, 1 blocked: blocked.codeact.test');
    assert.ok(summary > 0, r.stderr);
    assert.match(lines[summary + 1], /^  \d\d:\d\d:\d\d\.\d{3} GET blocked\.codeact\.test:80 blocked \(not on the allow-list\), \d+ bytes out, \d+ bytes in$/);
    assert.equal(r.code, 0);
  });

  it('exits 2 on bad arguments without touching the engine', async function () {
    const file = program('ok.py', 'print(1)\n');
    const empty = program('empty.py', '');
    const cases: [string[], string][] = [
      [['run'], 'codeact-sandbox: run needs exactly one PROGRAM.py (or - for stdin)\n\nusage:'],
      [['run', file, file], 'codeact-sandbox: run needs exactly one PROGRAM.py (or - for stdin)\n\nusage:'],
      [['run', '--frobnicate', file], 'codeact-sandbox: unknown option --frobnicate\n\nusage:'],
      [['run', '--timeout', '0', file], 'codeact-sandbox: --timeout must be a number from 1 to 86400\n\nusage:'],
      [['run', '--memory', 'lots', file], 'codeact-sandbox: --memory must be a number from 64 to 1048576\n\nusage:'],
      [['run', '--session', 'a', '--session', 'b', file], 'codeact-sandbox: --session given more than once\n\nusage:'],
      [['run', '--image'], 'codeact-sandbox: --image needs a value\n\nusage:'],
      [['run', path.join(dir, 'missing.py')], `codeact-sandbox: cannot read ${path.join(dir, 'missing.py')}: ENOENT\n\nusage:`],
      [['frobnicate'], 'codeact-sandbox: unknown command frobnicate\n\nusage:'],
      [['run', '--state', 'kernel', file], 'codeact-sandbox: --state must be fresh or session\n\nusage:'],
      [['run', '--state', 'session', file], 'codeact-sandbox: --state session keeps a state for the next run of a --session: give --session KEY\n\nusage:'],
      [['run', '--state', 'session', '--no-warm', '--session', 'a', file], 'codeact-sandbox: --state session needs the warm runner: a state lives in it (leave out --no-warm)\n\nusage:'],
      [['run', '--reset', file], 'codeact-sandbox: --reset applies to --state session\n\nusage:'],
    ];
    // Unreachable on purpose: any attempt to talk to the engine would fail with exit 1, not 2.
    const env = { DOCKER_HOST: 'unix:///nonexistent.sock' };
    const results = await Promise.all(cases.map(([args]) => runCli(args, { env })));
    results.forEach((r, i) => {
      const [args, start] = cases[i]!;
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '');
      assert.ok(r.stderr.startsWith(start), `${args.join(' ')}: ${r.stderr}`);
    });
    const r = await runCli(['run', empty], { env });
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      'Invalid execute_code input: `code` is empty. Call execute_code with {"code": "<a complete Python program that prints its results>"}.\n',
    );
  });

  it('reuses one container for --session KEY and removes it with cleanup --session KEY', async function () {
    const key = `itest-${process.pid}-${randomBytes(4).toString('hex')}`;
    const sessionLabel = `${LABEL.session}=${sessionDigest(`cli:${key}`)}`;
    const first = await runCli(['run', '--image', IMAGE, '--session', key, program('cwd.py', 'import os\nprint(os.getcwd())\n')]);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^stdout:\n\/sandbox\/runs\/0001-[0-9a-f]{6}\n$/);
    const containers = await containersWith(sessionLabel);
    assert.equal(containers.length, 1);
    // A CLI sandbox, labelled by this build: what `cleanup` and the after() hook go by.
    assert.deepEqual(await containersWith(sessionLabel, `${LABEL.ownerKind}=cli`, TEST_LABEL), containers);

    const second = await runCli(['run', '--image', IMAGE, '--session', key, program('runs.py', "import os\nprint(len(os.listdir('/sandbox/runs')))\n")]);
    assert.equal(second.code, 0, second.stderr);
    // The second run sees the first run's directory: same container, same work area.
    assert.equal(second.stdout, 'stdout:\n2\n');
    assert.deepEqual(await containersWith(sessionLabel), containers);
    assert.equal((await volumesWith(sessionLabel)).length, 1);

    const cleanup = await runCli(['cleanup', '--session', key]);
    assert.equal(cleanup.code, 0, cleanup.stderr);
    assert.equal(cleanup.stdout, 'removed 1 sandbox\n');
    assert.deepEqual(await containersWith(sessionLabel), []);
    assert.deepEqual(await volumesWith(sessionLabel), []);
  });

  it('--state session: the next run of the --session has what the last successful one left, --reset empties it', async function () {
    const key = `state-${randomBytes(4).toString('hex')}`;
    const session = ['run', '--image', IMAGE, '--session', key, '--state', 'session'];
    const kept = 'State: kept for the next call.';
    const first = await runCli([...session, program('set.py', 'x = 41\n')]);
    assert.equal(first.stdout, `The program ran and printed nothing. Only what the program prints comes back: end it with print(...) of everything you need to see.\n\n${kept}\n`);
    const failed = await runCli([...session, program('fail.py', 'x = 0\nraise SystemExit(3)\n')]);
    assert.equal(failed.stdout, 'exit code: 3\n\nState: unchanged, because this call did not succeed; the next call starts from the state the last successful call left.\n');
    const second = await runCli([...session, program('get.py', 'print(x + 1)\n')]);
    assert.equal(second.stdout, `stdout:\n42\n\n${kept}\n`);
    const reset = await runCli([...session, '--reset', program('empty.py', "print('x' in globals())\n")]);
    assert.equal(reset.stdout, `stdout:\nFalse\n\n${kept}\n`);
    assert.equal((await runCli(['cleanup', '--session', key])).code, 0);
  });

  it('--state session with --artifacts: a kept session whose sandbox was stopped (an engine restart) gets its state rebuilt by the next run', async function () {
    const key = `resume-${randomBytes(4).toString('hex')}`;
    const session = ['run', '--image', IMAGE, '--session', key, '--state', 'session', '--artifacts', path.join(dir, 'runs')];
    const kept = 'State: kept for the next call.';
    assert.equal((await runCli([...session, program('set.py', "x = 41\nopen('f.txt', 'w').write('hi')\nimport os\nhome = os.getcwd()\n")])).code, 0);
    // As an engine restart leaves it: stopped, its memory and work area gone. Found by its name: a
    // spare claimed by the session keeps the spare's labels.
    await dockerCli('stop', '-t', '1', sharedSandboxName('cli', sessionDigest(`cli:${key}`)));
    const next = await runCli([...session, program('get.py', "print(x + 1, open(home + '/f.txt').read())\n")]);
    assert.equal(
      next.stdout.replace(/in order \(\d+\.\d s\)/, 'in order (<s> s)'),
      "stdout:\n42 hi\n\nState: restored before this call by re-running this chat's 1 kept run in order (<s> s), because its sandbox had been removed. " +
        `Values computed from time, randomness, the network or workspace files that changed since may differ from before; files those runs wrote were written again.\n\n${kept}\n`,
    );
    assert.equal((await runCli(['cleanup', '--session', key])).code, 0);
  });

  it('exits 1 with the "Docker is not reachable" sentence, quickly, when there is no engine', async function () {
    const file = program('hello.py', "print('hello world')\n");
    const r = await runCli(['run', '--image', IMAGE, file], { env: { DOCKER_HOST: 'unix:///nonexistent.sock' } });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, `${SENTENCES.unreachable}\n`);
    assert.ok(r.ms < 15_000, `took ${r.ms} ms`);
  });
});
