import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { DEFAULT_DENY_GLOBS } from '../../src/core/files/names';
import { executeToolCall, type OutputsMode, type ToolCallOptions } from '../../src/core/toolCall';
import { sessionDigest } from '../../src/core/session';
import { ArtifactStore, type RunWriter } from '../../src/storage/artifactStore';
import { folderSource } from '../../src/storage/workspaceFolder';
import type { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { byRuntime, log, runLimits, uniqueSessionKey, useDocker } from './helpers';

const MB = 1024 * 1024;
const SAVED_TAIL = 'The files are not sent to you; describe them or print what you need from them.';

/** A tiny valid PNG written by the program; the test knows its exact bytes too. */
const PNG_PROGRAM = [
  'import struct, zlib',
  'def png(w, h):',
  '    raw = b"".join(b"\\0" + b"\\x10\\x20\\x30" * w for _ in range(h))',
  '    c = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))',
  '    return b"\\x89PNG\\r\\n\\x1a\\n" + c(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + c(b"IDAT", zlib.compress(raw, 9)) + c(b"IEND", b"")',
].join('\n');

describe('files in and out (integration)', function () {
  const sandboxes = useDocker();
  let provider: DockerSandboxProvider;
  let workspace: string;
  let store: ArtifactStore;

  before(function () {
    provider = sandboxes.makeProvider();
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-ws-'));
    fs.mkdirSync(path.join(workspace, 'data'));
    fs.writeFileSync(path.join(workspace, 'data', 'sales.csv'), 'region,amount\nnorth,10\nsouth,32\n');
    fs.writeFileSync(path.join(workspace, '.env'), 'TOKEN=secret\n');
    fs.symlinkSync('/etc/hostname', path.join(workspace, 'data', 'host.txt'));
    store = new ArtifactStore(fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-store-')));
  });

  after(function () {
    fs.rmSync(workspace, { recursive: true, force: true });
    fs.rmSync(store.root, { recursive: true, force: true });
  });

  function call(
    code: string,
    extra: { files?: string[]; outputs?: string[]; mode?: OutputsMode; caps?: Partial<ToolCallOptions['filesOut']['caps']>; sessionKey?: string; provider?: DockerSandboxProvider } = {},
  ) {
    const sessionKey = extra.sessionKey ?? uniqueSessionKey('files');
    let writer: RunWriter | undefined;
    const promise = executeToolCall(
      extra.provider ?? provider,
      log,
      { code, ...(extra.files ? { files: extra.files } : {}), ...(extra.outputs ? { outputs: extra.outputs } : {}) },
      {
        sessionKey,
        limits: runLimits(),
        memoryMb: 256,
        filesIn: { source: folderSource(workspace), caps: { denyGlobs: DEFAULT_DENY_GLOBS, maxFiles: 20, maxFileBytes: 200 * MB, maxTotalBytes: 200 * MB } },
        filesOut: { mode: extra.mode ?? 'declared', caps: { maxFiles: 20, maxFileBytes: 10 * MB, maxTotalBytes: 20 * MB, ...extra.caps }, savedWhere: 'in the CodeAct Sandbox view' },
        record: () => {
          const w = store.beginRun(sessionDigest(sessionKey), 'test');
          writer = w;
          return { dir: w.dir, addFile: (n, b, s) => w.addFile(n, b as Readable, s), finish: (o) => w.finish(o), discard: () => w.discard() };
        },
      },
    );
    return promise.then((r) => ({ ...r, writer: writer! }));
  }

  it('a CSV from the workspace is read by the program under its relative name', async function () {
    const r = await call('import csv\nrows = list(csv.DictReader(open("data/sales.csv")))\nprint(sum(int(r["amount"]) for r in rows))', { files: ['data/sales.csv'] });
    assert.equal(r.report.text, 'stdout:\n42');
    const record = store.readRun(r.writer.sessionDigest, r.writer.runId)!;
    assert.deepEqual(record.filesIn, ['data/sales.csv']);
    assert.equal(record.resultText, 'stdout:\n42');
  });

  it('refuses secrets, made-up names and traversal before anything runs', async function () {
    await assert.rejects(call('print(1)', { files: ['.env'] }), /"\.env" is refused: it is a protected file/);
    await assert.rejects(call('print(1)', { files: ['data/sale.csv'] }), /"data\/sale\.csv" is not in the workspace\. Similar names in the workspace: "data\/sales\.csv"\./);
    await assert.rejects(call('print(1)', { files: ['../etc/passwd'] }), (e: Error) => {
      assert.ok(!e.message.includes('passwd') && !e.message.includes('sales'), e.message);
      return /not a plain workspace-relative path/.test(e.message);
    });
    // A listed link that leads outside the workspace is not followed.
    await assert.rejects(call('print(1)', { files: ['data/host.txt'] }), /"data\/host\.txt" is a link to a file outside the workspace and cannot be shared\./);
  });

  it('a declared chart is collected with the exact bytes and a host-sniffed type', async function () {
    const r = await call(`${PNG_PROGRAM}\nopen("chart.png", "wb").write(png(3, 2))\nprint("drawn")`, { outputs: ['chart.png'] });
    const bytes = fs.readFileSync(path.join(r.writer.filesDir, 'chart.png'));
    assert.deepEqual(r.files, [{ name: 'chart.png', size: bytes.length, mediaType: 'image/png' }]);
    assert.equal(r.report.text, `stdout:\ndrawn\n\nSaved for the user in the CodeAct Sandbox view: chart.png (${bytes.length} B). ${SAVED_TAIL}`);
    assert.deepEqual(bytes.subarray(0, 8), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    // Byte-exact: the program prints the digest of what it wrote; the stored file must match it.
    const r2 = await call(`${PNG_PROGRAM}\nimport hashlib\nb = png(5, 5)\nopen("p.png", "wb").write(b)\nprint(hashlib.sha256(b).hexdigest())`, { outputs: ['p.png'] });
    const stored = fs.readFileSync(path.join(r2.writer.filesDir, 'p.png'));
    const digest = createHash('sha256').update(stored).digest('hex');
    assert.ok(r2.report.text.startsWith(`stdout:\n${digest}\n\nSaved for the user`), r2.report.text);
  });

  it('names a declared file the program did not write', async function () {
    const r = await call('open("a.txt", "w").write("A")', { outputs: ['a.txt', 'summary.txt'] });
    assert.equal(
      r.report.text,
      'The program ran and printed nothing. Only what the program prints comes back: end it with print(...) of everything you need to see.\n\n' +
        `Saved for the user in the CodeAct Sandbox view: a.txt (1 B). ${SAVED_TAIL}\n\n` +
        'Declared in outputs but not written by the program: summary.txt. Write each file into the working directory under exactly that name.',
    );
  });

  it('refuses a symlink to /etc/passwd, a link in the path, a folder and a fifo', async function () {
    const code = [
      'import os',
      'os.symlink("/etc/passwd", "passwd.txt")',
      'os.symlink("/etc", "etc")',
      'os.mkdir("folder.png")',
      'os.mkfifo("pipe.txt")',
      'print("ok")',
    ].join('\n');
    const r = await call(code, { outputs: ['passwd.txt', 'etc/passwd', 'folder.png', 'pipe.txt'] });
    // gVisor keeps a fifo made in a mounted directory inside its own kernel: the engine, reading
    // the work area from the host, never sees it.
    const refused = 'passwd.txt (a symbolic link); etc/passwd (its folder etc is a symbolic link); folder.png (a folder)';
    const tail = 'Only regular files within the limits are saved, and never in part.';
    assert.equal(
      r.report.text,
      byRuntime({
        runc: `stdout:\nok\n\nNot saved: ${refused}; pipe.txt (not a regular file). ${tail}`,
        gvisor: `stdout:\nok\n\nDeclared in outputs but not written by the program: pipe.txt. Write each file into the working directory under exactly that name.\n\nNot saved: ${refused}. ${tail}`,
      }),
    );
    assert.deepEqual(fs.readdirSync(r.writer.filesDir), []);
  });

  it("never reads the image's files through a run folder the program replaced with a link", async function () {
    const tail = 'Only regular files within the limits are saved, and never in part.';
    // Its own run folder: a link to /etc, where shadow is root's alone.
    const own = await call("import os, shutil\nd = os.getcwd()\nos.chdir('/')\nshutil.rmtree(d)\nos.symlink('/etc', d)\nprint('swapped')", { outputs: ['shadow', 'hostname'] });
    assert.equal(own.report.text, `stdout:\nswapped\n\nNot saved: shadow (its run folder was replaced by a symbolic link); hostname (its run folder was replaced by a symbolic link). ${tail}`);
    assert.deepEqual(fs.readdirSync(own.writer.filesDir), []);
    // The runs folder itself: a link to a folder of the program's, where its run folder's name leads to /etc.
    const key = uniqueSessionKey('files-runs-link');
    const runs = [
      'import os',
      "name = os.path.basename(os.getcwd())",
      "os.mkdir('/sandbox/elsewhere')",
      "os.symlink('/etc', '/sandbox/elsewhere/' + name)",
      "os.rename('/sandbox/runs', '/sandbox/runs-moved')",
      "os.symlink('/sandbox/elsewhere', '/sandbox/runs')",
      "print('swapped')",
    ].join('\n');
    const moved = await call(runs, { outputs: ['shadow'], sessionKey: key });
    assert.equal(moved.report.text, `stdout:\nswapped\n\nNot saved: shadow (the sandbox's runs folder was replaced by a symbolic link). ${tail}`);
    assert.deepEqual(fs.readdirSync(moved.writer.filesDir), []);
    // Then straight to /etc: the next call's files are copied into a work area laid out again, not
    // through the link into the image's own layer.
    const etc = await call("import os\nos.unlink('/sandbox/runs')\nos.symlink('/etc', '/sandbox/runs')\nprint('swapped')", { sessionKey: key });
    assert.equal(etc.report.text, 'stdout:\nswapped');
    const next = await call("import os\nprint(open('data/sales.csv').read().count(','), os.path.islink('/sandbox/runs'), os.path.exists('/etc/' + os.path.basename(os.getcwd())))", {
      files: ['data/sales.csv'],
      sessionKey: key,
    });
    assert.equal(
      next.report.text,
      "stdout:\n3 False False\n\nThe sandbox's work area had been changed so that nothing could be copied into it safely (its runs folder was replaced by a link), so the sandbox was restarted first; files written by earlier calls are gone.",
    );
  });

  it('refuses an over-cap output whole and keeps the ones that fit', async function () {
    const r = await call('open("big.bin", "wb").write(b"x" * (3 * 1024 * 1024))\nopen("small.txt", "w").write("ok")', {
      outputs: ['big.bin', 'small.txt'],
      caps: { maxFileBytes: 2 * MB },
    });
    assert.match(r.report.text, /Not saved: big\.bin \(3\.0 MB, over the limit of 2\.0 MB per file\)\./);
    assert.match(r.report.text, /Saved for the user in the CodeAct Sandbox view: small\.txt \(2 B\)\./);
    assert.deepEqual(fs.readdirSync(r.writer.filesDir).sort(), ['small.txt']);
  });

  it('collects what outputs.json lists in manifest mode, and refuses a bad manifest', async function () {
    const r = await call(
      'import json, os\nos.makedirs("out")\nopen("out/t.csv", "w").write("a,b\\n")\njson.dump({"files": ["out/t.csv"], "mediaType": "text/html"}, open("outputs.json", "w"))\nprint("done")',
      { mode: 'manifest' },
    );
    assert.equal(r.report.text, `stdout:\ndone\n\nSaved for the user in the CodeAct Sandbox view: out/t.csv (4 B). ${SAVED_TAIL}`);
    assert.deepEqual(r.files, [{ name: 'out/t.csv', size: 4 }]);
    const bad = await call('open("outputs.json", "w").write("[" * 1000)', { mode: 'manifest' });
    assert.match(bad.report.text, /No files were saved: outputs\.json is nested more than 8 levels deep\./);
    await assert.rejects(call('print(1)', { mode: 'manifest', outputs: ['x.png'] }), /The user chose manifest mode for produced files: do not pass `outputs`\./);
  });

  it('shares a large file streamed, without holding it in memory', async function () {
    this.timeout(120_000);
    const roomy = sandboxes.makeProvider({ limits: { workAreaMb: 128 } });
    const big = path.join(workspace, 'data', 'big.bin');
    const size = 64 * MB;
    const fd = fs.openSync(big, 'w');
    const block = Buffer.alloc(MB, 7);
    for (let i = 0; i < size / MB; i++) fs.writeSync(fd, block);
    fs.closeSync(fd);
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const r = await call('import os\nprint(os.path.getsize("data/big.bin"), open("data/big.bin", "rb").read(3))', {
      files: ['data/big.bin'],
      provider: roomy,
    }).finally(() => clearInterval(sampler));
    assert.equal(r.report.text, `stdout:\n${size} b'\\x07\\x07\\x07'`);
    assert.ok(peak - before < 48 * MB, `rss grew by ${Math.round((peak - before) / MB)} MB while sharing ${size / MB} MB`);
    // Too big for the work area: a clear sentence, not a sandbox failure.
    await assert.rejects(call('print(1)', { files: ['data/big.bin'] }), /do not fit the sandbox's work area \(64 MB\)/);
    fs.rmSync(big);
  });
});
