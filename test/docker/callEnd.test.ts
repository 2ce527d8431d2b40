import * as assert from 'node:assert/strict';
import { ZOMBIE_LED } from './fixtures/programs';
import { run, testSpec, uniqueSessionKey, useDocker } from './helpers';

/**
 * A call's processes end with it, whichever way its program ran: a daemon it left (a double fork,
 * its output closed) would otherwise run into later calls, its files changing under them and its
 * connections in their records or in none.
 */

/** Leaves a daemon behind: the double fork of a service, its output closed, running for a minute. */
const DAEMON = [
  'import os, time',
  'if os.fork() == 0:',
  '    os.setsid()',
  '    if os.fork() == 0:',
  '        for fd in (0, 1, 2):',
  '            os.close(fd)',
  '        time.sleep(60)',
  '    os._exit(0)',
  'os.wait()',
  "print('left one')",
].join('\n');

/** The processes of the sandbox that are neither PID 1, this program, nor the runner's child waiting for the next call. */
const OTHERS = [
  'import os',
  'def name(p):',
  '    try:',
  "        return open('/proc/%s/comm' % p).read().strip()",
  '    except OSError:',
  "        return ''",
  "others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid()) and name(p) != 'codeact-waiting']",
  // The runner forks each program (its parent is PID 1); docker exec's processes have no parent in the container.
  'print(len(others), os.getppid())',
].join('\n');

/** What `pip install` leaves before anything is installed: the user site's folder. */
const USER_SITE = "import os, site\nos.makedirs(site.getusersitepackages())\nprint('made')";

describe("a call's processes end with the call (integration)", function () {
  const sandboxes = useDocker();

  it('after pip made a user site: programs still run by the runner, and a daemon one leaves is gone at the next call', async function () {
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey('end-user-site');
    assert.equal((await run(provider, key, USER_SITE)).text, 'stdout:\nmade');
    assert.equal((await run(provider, key, DAEMON)).text, 'stdout:\nleft one');
    assert.equal((await run(provider, key, OTHERS)).text, 'stdout:\n0 1');
  });

  it('a process whose first thread exited alone (its status says zombie) is gone at the next call', async function () {
    const provider = sandboxes.makeProvider();
    const key = uniqueSessionKey('end-zombie-led');
    const code = [
      ZOMBIE_LED,
      'import sys',
      "print('left one')",
      // Reaped before the runner looks: only a process list that counts it sees it at all.
      'sys.stdout.flush()',
      'os._exit(0)',
    ].join('\n');
    assert.equal((await run(provider, key, code)).text, 'stdout:\nleft one');
    assert.equal((await run(provider, key, OTHERS)).text, 'stdout:\n0 1');
  });

  it('by docker exec (no runner): a daemon a program leaves is gone at the next call', async function () {
    const provider = sandboxes.makeProvider({ spec: () => testSpec({ warmRunner: false }) });
    const key = uniqueSessionKey('end-exec');
    assert.equal((await run(provider, key, DAEMON)).text, 'stdout:\nleft one');
    assert.equal((await run(provider, key, OTHERS)).text, 'stdout:\n0 0');
  });
});
