import * as assert from 'node:assert/strict';
import type { RunRecord } from '../../../src/storage/artifactStore';
import { FileBadge, artifactItem, fileNodes, firstLine, formatSize, runDocument, storageUse, type ArtifactNode } from '../../../src/vscode/artifactItems';

const RUN_ID = '20250102T030405678Z-abcdef';
const record: RunRecord = {
  version: 1,
  runId: RUN_ID,
  sessionKeyDigest: 'd1',
  sessionLabel: 'chat 1234',
  startedAt: '2025-01-02T03:04:05.678Z',
  durationMs: 1234,
  image: 'python:3.12-slim',
  sandboxId: 'c0ffee',
  exitCode: 0,
  timedOut: false,
  cancelled: false,
  program: '# make a chart\n\nimport csv\nprint(1)',
  resultText: 'stdout:\n1',
  filesIn: ['data/sales.csv'],
  files: [
    { name: 'chart.png', size: 2048, mediaType: 'image/png' },
    { name: 'out/table.csv', size: 12 },
  ],
  stdoutTruncated: false,
  stderrTruncated: false,
};
const context = {
  filePath: (s: string, r: string, n: string) => `/store/${s}/${r}/files/${n}`,
  time: (d: Date) => d.toISOString().slice(11, 19),
  day: (d: Date) => d.toLocaleString('en-US', { dateStyle: 'medium', timeStyle: 'short', hourCycle: 'h23', timeZone: 'UTC' }),
};

describe('artifact tree items (unit)', () => {
  it('a session: when it began and its first program\'s first line, its id and how many runs, expanded', () => {
    const node: ArtifactNode = {
      kind: 'session',
      session: {
        sessionDigest: 'd1',
        sessionLabel: 'chat 1234',
        runCount: 1,
        latestRunId: RUN_ID,
        latestStartedAt: record.startedAt,
        firstStartedAt: '2025-01-02T02:59:00.000Z',
        firstProgram: '# load\nimport pandas as pd\n',
      },
    };
    assert.deepEqual(artifactItem(node, context), {
      id: 'session:d1',
      // A chat is named by its day and time (it was "02:59:00 ...", no date: chats outlive a day).
      label: 'Jan 2, 2025, 02:59 import pandas as pd',
      description: 'chat 1234 · 1 run',
      icon: { id: 'comment-discussion' },
      collapsible: 'expanded',
      contextValue: 'codeactSession',
    });
    assert.equal(artifactItem({ ...node, session: { ...node.session, runCount: 3 } }, context).description, 'chat 1234 · 3 runs');
  });

  it('a run: time and first line of code, status and file count, the program as tooltip', () => {
    assert.deepEqual(artifactItem({ kind: 'run', sessionDigest: 'd1', record }, context), {
      id: `run:d1/${RUN_ID}`,
      label: '03:04:05 import csv',
      description: 'ok · 2 files',
      tooltip: { markdown: `\`\`\`python\n${record.program}\n\`\`\`` },
      icon: { id: 'pass', color: 'testing.iconPassed' },
      collapsible: 'expanded',
      contextValue: 'codeactRun',
      command: { command: 'codeactSandbox.showRun', title: 'Show Program and Output' },
    });
    const failed = (over: Partial<RunRecord>) => artifactItem({ kind: 'run', sessionDigest: 'd1', record: { ...record, files: [], ...over } }, context);
    assert.deepEqual(
      [failed({ exitCode: 3 }), failed({ exitCode: null, timedOut: true }), failed({ cancelled: true }), failed({ exitCode: null })].map((i) => [
        i.description,
        i.icon,
        i.collapsible,
      ]),
      [
        ['exit 3', { id: 'error', color: 'testing.iconFailed' }, 'none'],
        ['timed out', { id: 'error', color: 'testing.iconFailed' }, 'none'],
        ['cancelled', { id: 'error', color: 'testing.iconFailed' }, 'none'],
        ['exit ?', { id: 'error', color: 'testing.iconFailed' }, 'none'],
      ],
    );
    assert.equal(failed({ files: [{ name: 'a', size: 1 }] }).description, 'ok · 1 file');
  });

  it("a file: its name, size and type, opened from the store's path", () => {
    const run: ArtifactNode & { kind: 'run' } = { kind: 'run', sessionDigest: 'd1', record };
    const items = fileNodes(run).map((n) => artifactItem(n, context));
    assert.deepEqual(items, [
      {
        id: `file:d1/${RUN_ID}/chart.png`,
        label: 'chart.png',
        description: '2.0 KB',
        tooltip: { text: 'chart.png (2.0 KB, image/png)' },
        collapsible: 'none',
        contextValue: 'codeactFile',
        command: { command: 'codeactSandbox.openFile', title: 'Open' },
        filePath: `/store/d1/${RUN_ID}/files/chart.png`,
      },
      {
        id: `file:d1/${RUN_ID}/out/table.csv`,
        label: 'out/table.csv',
        description: '12 B',
        tooltip: { text: 'out/table.csv (12 B)' },
        collapsible: 'none',
        contextValue: 'codeactFile',
        command: { command: 'codeactSandbox.openFile', title: 'Open' },
        filePath: `/store/d1/${RUN_ID}/files/out/table.csv`,
      },
    ]);
  });

  it('sizes and first lines as the tree shows them', () => {
    assert.deepEqual([0, 1023, 1024, 1536, 1024 * 1024, 5.25 * 1024 * 1024].map(formatSize), ['0 B', '1023 B', '1.0 KB', '1.5 KB', '1.0 MB', '5.3 MB']);
    // The view's description: the store's use of its budget, nothing while it is empty.
    assert.deepEqual([0, 1536, 5.25 * 1024 * 1024].map((n) => storageUse(n, 500 * 1024 * 1024)), [undefined, '1.5 KB of 500 MB', '5.3 MB of 500 MB']);
    assert.equal(firstLine('#!/usr/bin/env python\n# comment\n   \n  x = 1\n'), 'x = 1');
    assert.equal(firstLine('# only a comment'), '# only a comment');
    assert.equal(firstLine(`print("${'a'.repeat(80)}")`), `print("${'a'.repeat(50)}...`);
  });

  it('the run document: program, the result as the model received it, streams and shared files', () => {
    assert.equal(
      runDocument(record, ['/store/stdout.txt'], '1/2/2025, 3:04:05 AM'),
      [
        '# Run 1/2/2025, 3:04:05 AM (`python:3.12-slim`)',
        '',
        '```python',
        record.program,
        '```',
        '',
        '## Result (as the model received it)',
        '',
        '```text',
        'stdout:\n1',
        '```',
        '',
        'Full output kept in: `/store/stdout.txt`',
        '',
        'Files shared in: `data/sales.csv`',
      ].join('\n'),
    );
    // A program holding a fence gets a longer one, and nothing optional is listed.
    const doc = runDocument({ ...record, program: 'print("```")', filesIn: [] }, [], 'then');
    assert.equal(doc, ['# Run then (`python:3.12-slim`)', '', '````python', 'print("```")', '````', '', '## Result (as the model received it)', '', '```text', 'stdout:\n1', '```'].join('\n'));
  });

  it('a run with a network shows its connections on its node and in its document', () => {
    const network = {
      complete: true,
      connections: [
        { time: Date.UTC(2025, 0, 2, 3, 4, 6, 100), host: 'index.example.org', port: 443, method: 'CONNECT', allowed: true, sni: 'index.example.org', bytesOut: 700, bytesIn: 2200 },
        { time: Date.UTC(2025, 0, 2, 3, 4, 6, 250), host: 'other.example.org', port: 80, method: 'GET', allowed: false, reason: 'not listed' as const, bytesOut: 140, bytesIn: 3400 },
      ],
    };
    const withNetwork = { ...record, files: [], filesIn: [], network };
    const node: ArtifactNode = { kind: 'run', sessionDigest: 'd1', record: withNetwork };
    assert.equal(artifactItem(node, context).description, 'ok · network: 1 allowed, 1 blocked: other.example.org');
    assert.equal(
      runDocument(withNetwork, [], 'then').split('## Network')[1],
      [
        '',
        '',
        '```text',
        'network: 1 allowed, 1 blocked: other.example.org.',
        '03:04:06.100 CONNECT index.example.org:443 allowed, 700 bytes out, 2200 bytes in',
        '03:04:06.250 GET other.example.org:80 blocked (not on the allow-list), 140 bytes out, 3400 bytes in',
        '```',
      ].join('\n'),
    );
  });

  it('a badge counts the files that arrived while the view was out of sight, until it is seen', () => {
    const shown: number[] = [];
    const badge = new FileBadge((n) => shown.push(n));
    badge.add(2, false);
    badge.add(1, true);
    badge.add(0, false);
    badge.add(3, false);
    badge.clear();
    badge.clear();
    assert.deepEqual(shown, [2, 5, 0]);
  });
});
