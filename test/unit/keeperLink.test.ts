import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  connectKeeper,
  engineNamed,
  exchange,
  keepSeconds,
  keeperAddress,
  keeperRequest,
  onLines,
  requestSession,
  runOptions,
  sessionOptions,
  standbyAddress,
  withRunOptions,
  type KeeperRequest,
} from '../../src/cli/keeperLink';
import { optionArgs, parse } from '../../src/cli/options';
import { ownFolder } from '../../src/cli/standby';

describe("a kept session's keeper, as a run finds it (unit)", () => {
  it('compares the options of two runs whatever their order, leaving out the program and what belongs to the run alone', () => {
    const a = parse(['run', '--session', 's', '--memory', '300', '--allow-domain', 'a.example', '--allow-domain', 'b.example', '--file', 'a.csv', 'one.py']);
    const b = parse(['run', '--allow-domain', 'a.example', '--memory', '300', '--allow-domain', 'b.example', '--session', 's', '--reset', '--output', 'o.png', 'two.py']);
    assert.equal(runOptions(a), runOptions(b));
    assert.equal(runOptions(a), '[["allow-domain",["a.example","b.example"]],["memory",["300"]],["session",["s"]]]');
    // The order of repeated values is theirs: two domains in another order are other options.
    assert.notEqual(runOptions(parse(['run', '--allow-domain', 'b.example', '--allow-domain', 'a.example'])), runOptions(parse(['run', '--allow-domain', 'a.example', '--allow-domain', 'b.example'])));
  });

  it("runs a run with the keeper's options and its own --reset, --file and --output", () => {
    const keeper = parse(['__keep-session', '--session', 's', '--file', 'old.csv', '--memory', '300']);
    const run = parse(['run', '--session', 's', '--memory', '300', '--reset', '--file', 'a.csv', '--file', 'b.csv', 'x.py']);
    const r = keeperRequest(run, 'print(1)\n', {});
    assert.deepEqual(r.perRun, [['reset', ['true']], ['file', ['a.csv', 'b.csv']]]);
    const merged = withRunOptions(keeper, r.perRun);
    assert.deepEqual([merged.command, [...merged.flags], merged.positional], ['run', [['session', ['s']], ['memory', ['300']], ['reset', ['true']], ['file', ['a.csv', 'b.csv']]], ['-']]);
  });

  it("gives a keeper its run's options as a command line that reads back the same", () => {
    const p = parse(['run', '--session', 's k', '--verbose', '--image', '--odd=value', '--allow-domain', 'a.example', '--allow-domain', 'b.example', 'x.py']);
    assert.deepEqual(optionArgs(p), ['--session=s k', '--verbose', '--image=--odd=value', '--allow-domain=a.example', '--allow-domain=b.example']);
    assert.equal(runOptions(parse(['__keep-session', ...optionArgs(p)])), runOptions(p));
  });

  it('names the engine by the variables and options that choose it', () => {
    const env = { DOCKER_HOST: 'unix:///run/x.sock', HOME: '/home/u', PATH: '/bin' };
    assert.equal(engineNamed(parse(['run', '--context', 'remote']), env), '[["unix:///run/x.sock",null,null,null,null,"/home/u"],[null,["remote"],null,null]]');
    // PATH does not choose the engine.
    assert.equal(engineNamed(parse(['run']), env), engineNamed(parse(['run']), { ...env, PATH: '/usr/bin' }));
  });

  it("keeps one address per session and engine, in the user's cache, and none where a socket's path is too long", () => {
    const env = { XDG_CACHE_HOME: '/cache', HOME: '/home/u' };
    const a = keeperAddress('s', parse(['run']), env);
    assert.match(a!, /^\/cache\/codeact-sandbox\/keepers\/[0-9a-f]{32}\.sock$/);
    assert.equal(keeperAddress('s', parse(['run', '--memory', '300']), env), a);
    assert.notEqual(keeperAddress('t', parse(['run']), env), a);
    assert.notEqual(keeperAddress('s', parse(['run', '--docker-host', 'tcp://h:2376']), env), a);
    assert.equal(keeperAddress('s', parse(['run']), { ...env, XDG_CACHE_HOME: `/${'c'.repeat(80)}` }), undefined);
  });

  it('keeps one address for a keeper waiting for a new session per engine and version, and none for an engine named by options', () => {
    const env = { XDG_CACHE_HOME: '/cache', HOME: '/home/u' };
    const at = (args: string[], e: NodeJS.ProcessEnv = env, version?: string) => standbyAddress(parse(['run', ...args]), e, version);
    const a = at(['--session', 's', '--memory', '300']);
    assert.match(a!, /^\/cache\/codeact-sandbox\/keepers\/new-[0-9a-f]{24}\.sock$/);
    // Whatever the session and the options: the waiting keeper takes the run with its own.
    assert.equal(at(['--session', 't', '--verbose']), a);
    assert.notEqual(at(['--session', 's'], { ...env, DOCKER_HOST: 'unix:///run/x.sock' }), a);
    assert.notEqual(at(['--session', 's'], env, '9.9.9'), a);
    assert.equal(at(['--session', 's'], { ...env, CODEACT_DEBUG: '1', PATH: '/bin' }), a);
    assert.equal(at(['--session', 's', '--context', 'remote']), undefined);
    assert.notEqual(a, keeperAddress('s', parse(['run']), env));
    assert.equal(at(['--session', 's'], { ...env, XDG_CACHE_HOME: `/${'c'.repeat(80)}` }), undefined);
  });

  it("reads a request's session from its options, and starts a maker with the options of every run of a session", () => {
    const r = keeperRequest(parse(['run', '--session', 's k', '--memory', '300', 'x.py']), 'print(1)\n', {});
    assert.equal(requestSession(r), 's k');
    assert.equal(requestSession({ ...r, options: '[["memory",["300"]]]' }), undefined);
    assert.equal(requestSession({ ...r, options: '[["session",["a","b"]]]' }), undefined);
    assert.equal(requestSession({ ...r, options: 'not json' }), undefined);
    // The extension's own variables go with it (a keeper waiting for a new session takes them), no other.
    assert.deepEqual(keeperRequest(parse(['run', 'x.py']), '', { PATH: '/bin', CODEACT_DEBUG: '1', CODEACT_A: 'a' }).own, [['CODEACT_A', 'a'], ['CODEACT_DEBUG', '1']]);
    const p = parse(['run', '--session', 's', '--reset', '--file', 'a.csv', '--output', 'o.png', '--memory', '300', 'x.py']);
    assert.deepEqual([...sessionOptions(p).flags], [['session', ['s']], ['memory', ['300']]]);
    assert.equal(runOptions(parse(['__make-spares', ...optionArgs(sessionOptions(p))])), runOptions(p));
  });

  it('reads --keep-seconds: 60 by default, 0 to 3600, undefined otherwise', () => {
    const keep = (...args: string[]) => keepSeconds(parse(['run', ...args]));
    assert.deepEqual([keep(), keep('--keep-seconds', '0'), keep('--keep-seconds', '3600'), keep('--keep-seconds', '3601'), keep('--keep-seconds', 'x')], [60, 0, 3600, undefined, undefined]);
  });

  describe('the exchange of one run', () => {
    let dir: string;
    let address: string;
    let server: net.Server;
    beforeEach(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-link-'));
      address = path.join(dir, 'k.sock');
      server = net.createServer({ allowHalfOpen: true });
      await new Promise<void>((resolve) => server.listen(address, resolve));
    });
    afterEach(async () => {
      await new Promise((resolve) => server.close(resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    });

    /** A keeper that answers the first request with `lines` and then ends the connection; resolves with the request. */
    function answers(lines: object[]): Promise<KeeperRequest> {
      return new Promise((resolve) =>
        server.once('connection', (socket) =>
          onLines(socket, (value) => {
            resolve(value as KeeperRequest);
            for (const line of lines) socket.write(`${JSON.stringify(line)}\n`);
            socket.end();
          }),
        ),
      );
    }

    it("sends the run, and gives back the keeper's exit code", async () => {
      const asked = answers([{ t: 'run' }, { t: 'exit', code: 3 }]);
      const socket = (await connectKeeper(address))!;
      const request = keeperRequest(parse(['run', '--session', 's', 'x.py']), 'print(1)\n', {});
      assert.equal(await exchange(socket, request), 3);
      assert.deepEqual(await asked, request);
      assert.deepEqual(request, { t: 'run', version: request.version, cwd: process.cwd(), options: '[["session",["s"]]]', perRun: [], engine: '[[null,null,null,null,null,null],[null,null,null,null]]', code: 'print(1)\n', own: [] });
      socket.destroy(); // as this process's exit would
    });

    it("leaves its side open once the run's end is here: it closes as the process exits, which a keeper waits for before it starts the next maker", async () => {
      const asked = answers([{ t: 'run' }, { t: 'exit', code: 0 }]);
      const socket = (await connectKeeper(address))!;
      assert.equal(await exchange(socket, keeperRequest(parse(['run', '--session', 's', 'x.py']), 'print(1)\n', {})), 0);
      await asked;
      assert.deepEqual([socket.readableEnded, socket.writableEnded, socket.destroyed], [true, false, false]);
      socket.destroy(); // as this process's exit would
    });

    it('gives back nothing when the keeper does not run it (it goes), or ends before it said it runs it', async () => {
      const no = answers([{ t: 'no' }]);
      assert.equal(await exchange((await connectKeeper(address))!, keeperRequest(parse(['run']), '', {})), undefined);
      await no;
      const silent = answers([]);
      assert.equal(await exchange((await connectKeeper(address))!, keeperRequest(parse(['run']), '', {})), undefined);
      await silent;
    });

    it('finds no keeper where nothing listens, or only a socket left behind', async () => {
      assert.equal(await connectKeeper(path.join(dir, 'none.sock')), undefined);
      await new Promise((resolve) => server.close(resolve));
      fs.writeFileSync(path.join(dir, 'left.sock'), '');
      assert.equal(await connectKeeper(path.join(dir, 'left.sock')), undefined);
      server = net.createServer();
      await new Promise<void>((resolve) => server.listen(path.join(dir, 'again.sock'), resolve));
    });
  });
});

describe('a keeper waiting for a new session (unit)', () => {
  it("waits only in a folder of the user's that nobody else can open: it takes any run's options from whoever connects", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-waiting-'));
    try {
      fs.chmodSync(dir, 0o700);
      assert.equal(ownFolder(dir), true);
      fs.chmodSync(dir, 0o750);
      assert.equal(ownFolder(dir), false);
      fs.chmodSync(dir, 0o703);
      assert.equal(ownFolder(dir), false);
      assert.equal(ownFolder(path.join(dir, 'absent')), false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
