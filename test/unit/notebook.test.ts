import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { sessionDigest } from '../../src/core/session';
import { ArtifactStore } from '../../src/storage/artifactStore';
import { NoRunsError, sessionNotebook } from '../../src/storage/notebook';
import { buildNotebook, cellId, isSvg, leftOutWhenKeptOnly, notebookRuns, type FileContent } from '../../src/storage/notebook';
import type { RunRecord, StoredFile } from '../../src/storage/runRecord';
import { PNG, outcome } from './storeFixtures';

function run(runId: string, fields: Partial<RunRecord>): RunRecord {
  const base = outcome({
    startedAt: '2026-12-02T09:00:00.000Z',
    durationMs: 120,
    image: 'codeact-sandbox/python-data:bookworm',
    runtime: 'runsc',
    resultText: 'stdout:\n1',
    filesIn: [],
    ...{ stdout: '1', stderr: '', stdoutBytes: 2, stderrBytes: 0, oomKilled: false, outputLimited: false, timeoutMs: 30_000, memoryMb: 1024 },
  });
  return { ...base, version: 1, runId, sessionKeyDigest: 'd1', sessionLabel: 'Chat: monthly revenue', files: [], ...fields };
}

/** The fixed set: streams and a shared file, an error, a timeout, an image and a non-image file, a session run that was not kept. */
const RUNS: RunRecord[] = [
  run('20261202T090000000Z-aa', {
    program: "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\nprint(len(df))",
    filesIn: ['data/sales.csv'],
    stdout: '12',
    stderr: 'warning: x',
    state: { reset: false, kept: true },
  }),
  run('20261202T090100000Z-bb', { startedAt: '2026-12-02T09:01:00.000Z', program: '1/0', exitCode: 1, stdout: '', stderr: 'Traceback (most recent call last):\nZeroDivisionError: division by zero', state: { reset: false, kept: false } }),
  run('20261202T090200000Z-cc', { startedAt: '2026-12-02T09:02:00.000Z', program: 'while True: pass', exitCode: null, timedOut: true, stdout: '', state: { reset: false, kept: false } }),
  run('20261202T090300000Z-dd', {
    startedAt: '2026-12-02T09:03:00.000Z',
    program: "plt.savefig('chart.png')\nopen('table.csv','w').write('a\\n')",
    stdout: '',
    files: [
      { name: 'chart.png', size: PNG.length, mediaType: 'image/png' },
      { name: 'table.csv', size: 2 },
    ],
    state: { reset: false, kept: true },
  }),
  run('20261202T090400000Z-ee', { startedAt: '2026-12-02T09:04:00.000Z', program: 'import threading', stdout: 'ok', state: { reset: false, kept: false } }),
];

const files = (_run: RunRecord, f: StoredFile): FileContent => (f.name === 'chart.png' ? { bytes: PNG } : { gone: true });
const NOW = new Date('2026-12-02T10:00:00.000Z');

describe('notebook export (unit)', () => {
  it('gives exact nbformat 4.5 JSON for a fixed set of runs', () => {
    const nb = buildNotebook({ sessionLabel: 'Chat: monthly revenue', runs: RUNS, file: files, now: NOW });
    const meta = (runId: string, startedAt: string, exitCode: number | null, kept: boolean, filesIn: string[] = []) => ({
      runId,
      startedAt,
      durationMs: 120,
      exitCode,
      filesIn,
      state: { reset: false, kept },
    });
    assert.deepEqual(nb, {
      nbformat: 4,
      nbformat_minor: 5,
      metadata: {
        kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' },
        language_info: { name: 'python' },
        codeact: { session: 'Chat: monthly revenue', exportedAt: '2026-12-02T10:00:00.000Z', runs: 5 },
      },
      cells: [
        {
          cell_type: 'markdown',
          id: 'codeact-header',
          metadata: {},
          source: [
            '# Chat: monthly revenue',
            '',
            '5 runs in the CodeAct Sandbox, 2026-12-02 09:00 UTC to 2026-12-02 09:04 UTC (exported 2026-12-02 10:00 UTC).',
            '',
            '- **Image:** `codeact-sandbox/python-data:bookworm`',
            '- **Runtime:** `runsc`',
            '- **Limits:** 30 s per run, 1024 MB of memory; no network',
            '- **State:** session: module globals carried over from one run to the next',
            '',
            'Each run ran in a fresh folder holding the workspace files it shared (named in its first line): run the notebook next to them.',
          ].join('\n'),
        },
        {
          cell_type: 'code',
          id: 'run-20261202T090000000Z-aa',
          execution_count: 1,
          metadata: { codeact: meta('20261202T090000000Z-aa', '2026-12-02T09:00:00.000Z', 0, true, ['data/sales.csv']) },
          source: "# shared from the workspace: data/sales.csv\nimport pandas as pd\ndf = pd.read_csv('data/sales.csv')\nprint(len(df))",
          outputs: [
            { output_type: 'stream', name: 'stdout', text: '12\n' },
            { output_type: 'stream', name: 'stderr', text: 'warning: x\n' },
          ],
        },
        {
          cell_type: 'code',
          id: 'run-20261202T090100000Z-bb',
          execution_count: 2,
          metadata: { tags: ['raises-exception', 'codeact-state-not-kept'], codeact: meta('20261202T090100000Z-bb', '2026-12-02T09:01:00.000Z', 1, false) },
          source: '1/0',
          outputs: [
            { output_type: 'stream', name: 'stderr', text: 'Traceback (most recent call last):\nZeroDivisionError: division by zero\n' },
            { output_type: 'display_data', data: { 'text/plain': "This run's state was not kept: the next run started from the state before it." }, metadata: {} },
            { output_type: 'error', ename: 'Exit code', evalue: 'the program exited with code 1', traceback: ['Exit code: the program exited with code 1'] },
          ],
        },
        {
          cell_type: 'code',
          id: 'run-20261202T090200000Z-cc',
          execution_count: 3,
          metadata: { tags: ['raises-exception', 'codeact-state-not-kept'], codeact: meta('20261202T090200000Z-cc', '2026-12-02T09:02:00.000Z', null, false) },
          source: 'while True: pass',
          outputs: [
            { output_type: 'display_data', data: { 'text/plain': "This run's state was not kept: the next run started from the state before it." }, metadata: {} },
            { output_type: 'error', ename: 'Timed out', evalue: 'the program did not finish within 30 s and was stopped', traceback: ['Timed out: the program did not finish within 30 s and was stopped'] },
          ],
        },
        {
          cell_type: 'code',
          id: 'run-20261202T090300000Z-dd',
          execution_count: 4,
          metadata: { codeact: meta('20261202T090300000Z-dd', '2026-12-02T09:03:00.000Z', 0, true) },
          source: "plt.savefig('chart.png')\nopen('table.csv','w').write('a\\n')",
          outputs: [
            { output_type: 'display_data', data: { 'image/png': PNG.toString('base64'), 'text/plain': 'chart.png (16 B)' }, metadata: {} },
            { output_type: 'display_data', data: { 'text/plain': 'Saved table.csv (2 B).' }, metadata: {} },
          ],
        },
        {
          cell_type: 'code',
          id: 'run-20261202T090400000Z-ee',
          execution_count: 5,
          metadata: { tags: ['codeact-state-not-kept'], codeact: meta('20261202T090400000Z-ee', '2026-12-02T09:04:00.000Z', 0, false) },
          source: 'import threading',
          outputs: [
            { output_type: 'stream', name: 'stdout', text: 'ok\n' },
            { output_type: 'display_data', data: { 'text/plain': "This run's state was not kept: the next run started from the state before it." }, metadata: {} },
          ],
        },
      ],
    });
    validate(nb);
  });

  it('leaves out the runs whose state was not kept, and those before the last reset, when asked', () => {
    const withReset = [
      run('r1', { state: { reset: false, kept: true } }),
      run('r2', { state: { reset: true, kept: true } }),
      run('r3', { state: { reset: false, kept: false } }),
      run('r4', { state: { reset: false, kept: true } }),
      // A reset that failed left the state as it was: the runs before it still count.
      run('r5', { state: { reset: true, kept: false } }),
      run('r6', { state: { reset: false, kept: true } }),
    ];
    assert.deepEqual(notebookRuns(withReset, { keptStateOnly: true }).map((r) => r.runId), ['r2', 'r4', 'r6']);
    assert.deepEqual(notebookRuns(withReset).map((r) => r.runId), ['r1', 'r2', 'r3', 'r4', 'r5', 'r6']);
    assert.equal(leftOutWhenKeptOnly(withReset), 3);
    assert.equal(leftOutWhenKeptOnly(withReset.slice(0, 2)), 1);
    const nb = buildNotebook({ sessionLabel: 'c', runs: RUNS, file: files, now: NOW }, { keptStateOnly: true });
    assert.deepEqual(nb.cells.map((c) => c.id), ['codeact-header', 'run-20261202T090000000Z-aa', 'run-20261202T090300000Z-dd']);
    assert.ok((nb.cells[0]!.source as string).endsWith('rebuilds the state the chat ended with.\n\nEach run ran in a fresh folder holding the workspace files it shared (named in its first line): run the notebook next to them.'));
    validate(nb);
  });

  it('says how much more the full log holds, names a file the budget removed, and exports invalid UTF-8 safely', () => {
    const big = run('big', {
      stdout: 'head\n[... 999990 bytes left out ...]\ntail',
      stdoutBytes: 1_000_000,
      stdoutTruncated: true,
      stderr: 'bad \ufffd byte',
      files: [{ name: 'plot.png', size: 2048, mediaType: 'image/png' }],
    });
    const nb = buildNotebook({ sessionLabel: 'c', runs: [big], file: () => ({ gone: true }), now: NOW });
    assert.deepEqual((nb.cells[1] as { outputs: unknown[] }).outputs, [
      { output_type: 'stream', name: 'stdout', text: 'head\n[... 999990 bytes left out ...]\ntail\n' },
      { output_type: 'stream', name: 'stderr', text: 'bad \ufffd byte\n' },
      { output_type: 'display_data', data: { 'text/plain': 'Shown as the model saw it; kept whole with the run: standard output (977 KB) in stdout.txt.' }, metadata: {} },
      { output_type: 'display_data', data: { 'text/plain': 'Saved plot.png (2.0 KB); no longer stored (removed to keep the storage within its budget).' }, metadata: {} },
    ]);
    validate(nb);
  });

  it('shows a record from before the streams were kept by what the model received; each failure in words', () => {
    const old = run('old', { stdout: undefined, stderr: undefined, resultText: 'stdout:\nhi', runtime: undefined, timeoutMs: undefined, memoryMb: undefined });
    const nb = buildNotebook({ sessionLabel: 'c', runs: [old, run('oom', { exitCode: 137, oomKilled: true }), run('stop', { exitCode: null, cancelled: true }), run('flood', { exitCode: null, outputLimited: true })], file: files, now: NOW });
    const outs = nb.cells.slice(1).map((c) => (c as { outputs: Array<Record<string, unknown>> }).outputs.at(-1));
    assert.deepEqual(outs, [
      { output_type: 'display_data', data: { 'text/plain': 'stdout:\nhi' }, metadata: {} },
      { output_type: 'error', ename: 'Out of memory', evalue: "the program was killed for using more than the sandbox's 1024 MB of memory", traceback: ["Out of memory: the program was killed for using more than the sandbox's 1024 MB of memory"] },
      { output_type: 'error', ename: 'Stopped', evalue: 'the run was cancelled by the user', traceback: ['Stopped: the run was cancelled by the user'] },
      { output_type: 'error', ename: 'Output limit', evalue: 'the program printed more than the output limit and was stopped', traceback: ['Output limit: the program printed more than the output limit and was stopped'] },
    ]);
    assert.ok((nb.cells[0]!.source as string).includes('- **Runtime:** unknown, `runsc`\n- **Limits:** 30 s per run, 1024 MB of memory; no network\n- **State:** fresh'));
    validate(nb);
  });

  it('says "no network" only when the runs had none: runs with an allow-list reached the allowed domains', () => {
    const header = (runs: RunRecord[]) => (buildNotebook({ sessionLabel: 'c', runs, file: files, now: NOW }).cells[0]!.source as string).split('\n').find((l) => l.startsWith('- **Limits:**'));
    const networked = run('net', { network: { connections: [], complete: true } });
    // Was "...; no network" whatever the runs had.
    assert.equal(header([networked]), '- **Limits:** 30 s per run, 1024 MB of memory; network to the allowed domains only, through a recording proxy');
    assert.equal(
      header([networked, run('plain', {})]),
      '- **Limits:** 30 s per run, 1024 MB of memory; network to the allowed domains only, through a recording proxy for 1 of 2 runs, no network for the others',
    );
    assert.equal(header([run('plain', {})]), '- **Limits:** 30 s per run, 1024 MB of memory; no network');
  });

  it('shows an SVG as an image (no script runs, nothing is fetched), and only when the bytes are an SVG', () => {
    const svg = '<?xml version="1.0"?>\n<!-- matplotlib -->\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>';
    assert.equal(isSvg(Buffer.from(svg)), true);
    assert.equal(isSvg(Buffer.from('\ufeff<svg/>')), true);
    for (const not of ['<html><svg></svg></html>', '<!-- never closed <svg>', 'svg', '<svgx>', '']) assert.equal(isSvg(Buffer.from(not)), false, not);
    // Linear in its input: a hostile file of many comments is refused or accepted at once.
    assert.equal(isSvg(Buffer.from(`${'<!--a-->'.repeat(200_000)}x`)), false);
    const nb = buildNotebook(
      { sessionLabel: 'c', runs: [run('s', { files: [{ name: 'a "b".svg', size: 10 }, { name: 'c.svg', size: 10 }] })], file: (_r, f) => ({ bytes: Buffer.from(f.name === 'c.svg' ? 'not svg' : svg) }), now: NOW },
    );
    assert.deepEqual((nb.cells[1] as { outputs: unknown[] }).outputs.slice(1), [
      {
        output_type: 'display_data',
        data: { 'text/html': `<img src="data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}" alt="a &#34;b&#34;.svg"/>`, 'text/plain': 'a "b".svg (10 B)' },
        metadata: {},
      },
      { output_type: 'display_data', data: { 'text/plain': 'Saved c.svg (10 B).' }, metadata: {} },
    ]);
    validate(nb);
  });

  it('names the images past the notebook-wide budget instead of holding them', () => {
    const big = { name: 'p.png', size: 4 * 1024 * 1024, mediaType: 'image/png' };
    const runs = Array.from({ length: 13 }, (_, i) => run(`r${i}`, { files: [big] }));
    const nb = buildNotebook({ sessionLabel: 'c', runs, file: () => ({ bytes: Buffer.alloc(big.size) }), now: NOW });
    const shown = nb.cells.slice(1).map((c) => Object.keys((c as { outputs: Array<{ data?: object }> }).outputs[1]!.data!)[0]);
    assert.deepEqual(shown, [...Array(12).fill('image/png'), 'text/plain']);
    assert.deepEqual((nb.cells[13] as { outputs: Array<{ data: object }> }).outputs[1]!.data, { 'text/plain': 'Saved p.png (4.0 MB); not shown here: the notebook holds 50 MB of images at most.' });
  });

  it('reads stored images from the store, and takes a link in place of one as gone', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-notebook-'));
    try {
      const store = new ArtifactStore(path.join(root, 'runs'));
      for (const name of ['a.png', 'b.png']) {
        const writer = store.beginRun(sessionDigest('cli:nb'), 'session nb');
        await writer.addFile(name, Readable.from([PNG]), PNG.length);
        writer.finish(outcome({ stdout: '', stderr: '' }));
      }
      const digest = sessionDigest('cli:nb');
      const [second, first] = await store.listRuns(digest);
      const linked = store.filePath(digest, second!.runId, 'b.png');
      fs.rmSync(linked);
      fs.symlinkSync(store.filePath(digest, first!.runId, 'a.png'), linked);
      const { notebook } = await sessionNotebook(store, digest, { now: NOW });
      const images = notebook.cells.slice(1).map((c) => (c as { outputs: Array<{ data: Record<string, string> }> }).outputs[0]!.data);
      assert.deepEqual(images, [
        { 'image/png': PNG.toString('base64'), 'text/plain': 'a.png (16 B)' },
        { 'text/plain': 'Saved b.png (16 B); no longer stored (removed to keep the storage within its budget).' },
      ]);
      // The chat up to its first run; a run that is not there gives the sentence, not an empty notebook.
      assert.equal((await sessionNotebook(store, digest, { upToRunId: first!.runId, now: NOW })).notebook.cells.length, 2);
      await assert.rejects(sessionNotebook(store, digest, { upToRunId: '20000101T000000000Z-000000' }), (e: unknown) => e instanceof NoRunsError && e.message === 'This chat has no runs to put in a notebook.');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('makes a valid cell id of any run id', () => {
    assert.equal(cellId('20261202T090000000Z-0a1b'), 'run-20261202T090000000Z-0a1b');
    assert.equal(cellId('a.b/c'), 'run-a_b_c');
    assert.equal(cellId('x'.repeat(100)).length, 64);
  });
});

/** nbformat 4's own schema, by Jupyter's own validator (Debian's python3-nbformat: scripts/ensure-python-tools.sh). */
function validate(nb: unknown): void {
  const python = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
  const check = 'import sys, nbformat\nnb = nbformat.reads(sys.stdin.read(), as_version=4)\nnbformat.validate(nb)\nprint("valid", nb.nbformat, nb.nbformat_minor)';
  let out: string;
  try {
    out = execFileSync(python, ['-c', check], { input: JSON.stringify(nb), encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) {
    const stderr = String((e as { stderr?: unknown }).stderr ?? e);
    if (stderr.includes("No module named 'nbformat'")) assert.fail('nbformat is not installed: run scripts/ensure-python-tools.sh');
    assert.fail(`nbformat refused the notebook:\n${stderr}`);
  }
  assert.equal(out.trim(), 'valid 4 5');
}
