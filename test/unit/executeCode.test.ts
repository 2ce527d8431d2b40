import * as assert from 'node:assert/strict';
import { ToolError } from '../../src/core/errors';
import { executeCode } from '../../src/core/executeCode';
import { silentLogger } from '../../src/core/logger';
import type { ProgramExit, ProgramRun, Sandbox, SandboxProvider } from '../../src/core/sandbox';
import { SessionStates } from '../../src/core/state';

/** A sandbox whose "program" is a JS function: enough to test the pipeline's own logic. */
function fakeProvider(body: (run: ProgramRun) => Promise<number | null>, extra: Partial<Sandbox> = {}): SandboxProvider & { keys: string[] } {
  const keys: string[] = [];
  const sandbox: Sandbox = {
    ...extra,
    id: 'fake',
    image: 'fake:1',
    async run(run): Promise<ProgramExit> {
      run.onStart();
      return { exitCode: await body(run), workDir: '/sandbox/runs/0001' };
    },
    async collect() {
      return { saved: [], missing: [], refused: [] };
    },
  };
  return {
    keys,
    async acquire(key) {
      keys.push(key);
      return sandbox;
    },
  };
}

const untilAborted = (run: ProgramRun) => new Promise<null>((resolve) => run.signal.addEventListener('abort', () => resolve(null)));
const limits = { timeoutMs: 5000, outputBudgetBytes: 7800, maxOutputBytes: 1024 * 1024 };

describe('execute pipeline (unit)', () => {
  it('passes the session key through and formats the result', async () => {
    const provider = fakeProvider(async (run) => {
      run.onStdout(Buffer.from('hi\n'));
      return 0;
    });
    const report = await executeCode(provider, silentLogger, { code: 'print("hi")', sessionKey: 'chat:x' }, limits);
    assert.deepEqual(provider.keys, ['chat:x']);
    assert.equal(report.text, 'stdout:\nhi');
    assert.equal(report.exitCode, 0);
    assert.equal(report.image, 'fake:1');
  });

  it('a missing module gets the hint, from what the sandbox says it has and how packages are added', async () => {
    let asked = 0;
    const traceback = "Traceback (most recent call last):\n  File \"/sandbox/runs/0001/program.py\", line 1, in <module>\nModuleNotFoundError: No module named 'cv2'\n";
    const provider = fakeProvider(
      async (run) => {
        run.onStderr(Buffer.from(traceback));
        return 1;
      },
      {
        packagesSetting: 'codeactSandbox.pythonPackages',
        installed: async () => {
          asked++;
          return [
            { name: 'numpy', version: '1.24.2', modules: ['numpy'], requested: true },
            { name: 'pandas', version: '1.5.3', modules: ['pandas'], requested: true },
          ];
        },
      },
    );
    const report = await executeCode(provider, silentLogger, { code: 'import cv2', sessionKey: 'k' }, limits);
    assert.equal(
      report.text,
      `stderr:\n${traceback.trimEnd()}\n\nexit code: 1\n\n` +
        "The sandbox has no module named 'cv2', and it has no network, so pip install cannot work there. Installed packages include numpy 1.24.2 and pandas 1.5.3. If the program needs cv2, ask the user to add \"opencv-python-headless\" to the codeactSandbox.pythonPackages setting.",
    );
    assert.equal(asked, 1);
  });

  it('a program that exits 0 is never asked about, even if it printed a ModuleNotFoundError itself', async () => {
    let asked = 0;
    const provider = fakeProvider(
      async (run) => {
        run.onStderr(Buffer.from("ModuleNotFoundError: No module named 'cv2'\n"));
        return 0;
      },
      { installed: async () => (asked++, []) },
    );
    const report = await executeCode(provider, silentLogger, { code: 'x', sessionKey: 'k' }, limits);
    assert.equal(report.text, "stderr:\nModuleNotFoundError: No module named 'cv2'");
    assert.equal(asked, 0);
  });

  it('stops the program at the timeout and says so', async () => {
    const provider = fakeProvider(untilAborted);
    const report = await executeCode(provider, silentLogger, { code: 'x', sessionKey: 'k' }, { ...limits, timeoutMs: 50 });
    assert.equal(report.timedOut, true);
    assert.equal(report.exitCode, null);
    assert.match(report.text, /^The program did not finish within 0\.1 s and was stopped\./);
  });

  it("stops the program when the caller cancels", async () => {
    const abort = new AbortController();
    // Cancelled once the program runs (not at a moment that a slow machine may reach before it starts).
    const provider = fakeProvider((run) => {
      const stopped = untilAborted(run);
      abort.abort();
      return stopped;
    });
    const report = await executeCode(provider, silentLogger, { code: 'x', sessionKey: 'k' }, limits, abort.signal);
    assert.equal(report.cancelled, true);
    assert.equal(report.text, 'The run was cancelled by the user and the program was stopped.');
  });

  it('stops a flood at the output ceiling', async () => {
    const provider = fakeProvider(async (run) => {
      const chunk = Buffer.alloc(64 * 1024, 'y');
      while (!run.signal.aborted) {
        run.onStdout(chunk);
        await new Promise((r) => setImmediate(r));
      }
      return null;
    });
    const report = await executeCode(provider, silentLogger, { code: 'x', sessionKey: 'k' }, limits);
    assert.equal(report.outputLimited, true);
    assert.ok(report.stdout.totalBytes > limits.maxOutputBytes);
    assert.ok(report.stdout.totalBytes <= limits.maxOutputBytes + 64 * 1024);
    assert.match(report.text, /The program printed more than 1\.0 MB and was stopped\./);
  });

  it('a cancelled call never reaches the sandbox', async () => {
    const provider = fakeProvider(async () => 0);
    const abort = new AbortController();
    abort.abort();
    await assert.rejects(
      executeCode(provider, silentLogger, { code: 'x', sessionKey: 'k' }, limits, abort.signal),
      (e: unknown) => e instanceof ToolError && e.code === 'cancelled',
    );
    assert.deepEqual(provider.keys, []);
  });

  it('an unexpected sandbox failure becomes one model-facing sentence', async () => {
    const provider = fakeProvider(async () => {
      throw new Error('socket hang up at 10.0.0.5:2376 with secret token');
    });
    await assert.rejects(
      executeCode(provider, silentLogger, { code: 'x', sessionKey: 'k' }, limits),
      (e: unknown) => e instanceof ToolError && e.code === 'sandbox_failed' && !e.modelMessage.includes('10.0.0.5'),
    );
  });
});

describe('execute pipeline, session state (unit)', () => {
  /** A sandbox that reports a state outcome, and records what state the run asked for. */
  function stateful(exitCode: number, state: ProgramExit['state'], asked: (ProgramRun['state'] | undefined)[]): SandboxProvider {
    const sandbox: Sandbox = {
      id: 'fake',
      image: 'fake:1',
      async run(run): Promise<ProgramExit> {
        run.onStart();
        asked.push(run.state);
        run.onStdout(Buffer.from('42\n'));
        return { exitCode, workDir: '/sandbox/runs/0001', ...(state ? { state } : {}) };
      },
      async collect() {
        return { saved: [], missing: [], refused: [] };
      },
    };
    return { acquire: async () => sandbox };
  }

  it('passes reset to the sandbox and ends the result with the state line', async () => {
    const asked: (ProgramRun['state'] | undefined)[] = [];
    const states = new SessionStates();
    const kept = stateful(0, { from: '', now: 'aaaaaaaa', kept: true }, asked);
    const report = await executeCode(kept, silentLogger, { code: 'x = 41', sessionKey: 'k', state: { reset: true, states } }, limits);
    assert.equal(report.text, 'stdout:\n42\n\nState: kept for the next call.');
    const failed = stateful(3, { from: 'aaaaaaaa', now: 'aaaaaaaa', kept: false }, asked);
    const again = await executeCode(failed, silentLogger, { code: 'x = 0', sessionKey: 'k', state: { reset: false, states } }, limits);
    assert.equal(again.text, 'stdout:\n42\n\nexit code: 3\n\nState: unchanged, because this call did not succeed; the next call starts from the state the last successful call left.');
    assert.deepEqual(asked, [{ reset: true }, { reset: false }]);
  });

  it('fresh mode asks for no state and adds no line', async () => {
    const asked: (ProgramRun['state'] | undefined)[] = [];
    const report = await executeCode(stateful(0, undefined, asked), silentLogger, { code: 'print(42)', sessionKey: 'k' }, limits);
    assert.equal(report.text, 'stdout:\n42');
    assert.deepEqual(asked, [undefined]);
  });
});
