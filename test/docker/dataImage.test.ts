import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { DEFAULT_DENY_GLOBS } from '../../src/core/files/names';
import { formatBytes } from '../../src/core/format';
import { normalizeProjectName } from '../../src/core/requirements';
import { sessionDigest } from '../../src/core/session';
import { executeToolCall } from '../../src/core/toolCall';
import { ensureDataImage, imageDistributions, DATA_PACKAGES } from '../../src/docker/images';
import { ArtifactStore, type RunWriter } from '../../src/storage/artifactStore';
import { folderSource } from '../../src/storage/workspaceFolder';
import { testDataImage, type DataImageRun } from './fixtures/dataImage';
import { IMAGE, TEST_LIMITS, docker, log, run, runLimits, testSpec, uniqueSessionKey, useDocker } from './helpers';

const MB = 1024 * 1024;

/** Twelve months of sales in three regions; amounts in quarters, so every sum is exact. */
function salesCsv(): { csv: string; best: string; bestTotal: number; total: number } {
  const months = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
  const rows = ['date,region,amount'];
  const totals: number[] = [];
  for (let m = 1; m <= 12; m++) {
    let sum = 0;
    ['north', 'south', 'east'].forEach((region, r) => {
      for (const day of [3, 17]) {
        const amount = 400 + ((m * 37 + r * 11 + day) % 53) * 12.25;
        sum += amount;
        rows.push(`2024-${String(m).padStart(2, '0')}-${String(day).padStart(2, '0')},${region},${amount.toFixed(2)}`);
      }
    });
    totals.push(sum);
  }
  const max = Math.max(...totals);
  assert.equal(totals.filter((t) => t === max).length, 1, 'the data has one best month');
  return { csv: `${rows.join('\n')}\n`, best: `${months[totals.indexOf(max)]} 2024`, bestTotal: max, total: totals.reduce((a, b) => a + b, 0) };
}

const money = (n: number) => n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });

const REVENUE_PROGRAM = `import pandas as pd
import matplotlib.pyplot as plt

df = pd.read_csv("data/sales.csv", parse_dates=["date"])
monthly = df.groupby(df["date"].dt.to_period("M"))["amount"].sum()
best = monthly.idxmax()
fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
monthly.plot(kind="bar", ax=ax, color="steelblue")
ax.set_title("Monthly revenue 2024")
ax.set_xlabel("month")
ax.set_ylabel("revenue")
fig.tight_layout()
fig.savefig("revenue.png")
print(f"best month: {best.strftime('%B %Y')} (revenue {monthly.max():,.2f})")
print(f"months: {len(monthly)}, total {monthly.sum():,.2f}")
`;

describe('the data image (integration)', function () {
  const sandboxes = useDocker();
  let made: DataImageRun;

  before(async function () {
    // A build from scratch takes minutes on a busy machine; finding the image takes milliseconds.
    this.timeout(45 * 60_000);
    made = await testDataImage();
  });

  it('is made by the route this engine allows, labelled with what the build found installed', async function () {
    const { image } = made;
    assert.match(image.tag, new RegExp(`^codeact-sandbox/data:${image.route}-[0-9a-f]{16}$`));
    const requested = image.distributions.filter((d) => d.requested).map((d) => normalizeProjectName(d.name));
    assert.deepEqual(requested.sort(), DATA_PACKAGES.map((p) => normalizeProjectName(p.name)).sort());
    assert.deepEqual(await imageDistributions(docker, image.tag), image.distributions);
    if (image.built) {
      // Steps the engine had cached (an earlier build of the same apt step) print nothing.
      const phases: string[] = [...new Set(made.progress.map((p) => p.phase))].filter((p) => p !== 'pulling-base');
      const all: string[] = ['choosing-route', 'downloading-packages', 'installing-packages', 'checking-packages', 'finishing'];
      assert.deepEqual(phases, made.fromScratch ? all : all.filter((p) => phases.includes(p)));
      assert.deepEqual(phases.slice(-2), ['checking-packages', 'finishing']);
      if (made.fromScratch) {
        const last = [...made.progress].reverse().find((p) => p.phase === 'installing-packages')!;
        assert.ok(last.total! > 100 && last.done === last.total, last.message);
      }
      if (image.route === 'debian') {
        // No registry here: the log says why the pip route gave way.
        assert.ok(made.decisions.some((d) => d.startsWith('data image: the pip route cannot start: python:3.12-slim-bookworm is not on this engine and ')), made.decisions.join('\n'));
      }
    }
  });

  it('is reused: the next call finds it by its tag instead of building', async function () {
    const started = Date.now();
    const again = await ensureDataImage({ docker, log });
    assert.equal(again.id, made.image.id);
    assert.equal(again.built, false);
    assert.ok(Date.now() - started < 5_000, `${Date.now() - started} ms`);
  });

  describe('the README scenario: the revenue chart from data/sales.csv', function () {
    let workspace: string;
    let store: ArtifactStore;
    const data = salesCsv();

    before(function () {
      workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-ws-'));
      fs.mkdirSync(path.join(workspace, 'data'));
      fs.writeFileSync(path.join(workspace, 'data', 'sales.csv'), data.csv);
      store = new ArtifactStore(fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-store-')));
    });

    after(function () {
      fs.rmSync(workspace, { recursive: true, force: true });
      fs.rmSync(store.root, { recursive: true, force: true });
    });

    it('pandas reads the shared CSV, prints the best month, and matplotlib writes a real chart', async function () {
      this.timeout(180_000);
      const provider = sandboxes.makeProvider({ image: made.image.tag, limits: { memoryMb: 1024, workAreaMb: 128 } });
      const sessionKey = uniqueSessionKey('revenue');
      let writer: RunWriter | undefined;
      const r = await executeToolCall(
        provider,
        log,
        { code: REVENUE_PROGRAM, files: ['data/sales.csv'], outputs: ['revenue.png'] },
        {
          sessionKey,
          limits: runLimits({ timeoutMs: 120_000 }),
          memoryMb: 1024,
          filesIn: { source: folderSource(workspace), caps: { denyGlobs: DEFAULT_DENY_GLOBS, maxFiles: 20, maxFileBytes: 10 * MB, maxTotalBytes: 10 * MB } },
          filesOut: { mode: 'declared', caps: { maxFiles: 20, maxFileBytes: 10 * MB, maxTotalBytes: 20 * MB }, savedWhere: 'in the CodeAct Sandbox view' },
          record: () => {
            const w = store.beginRun(sessionDigest(sessionKey), 'test');
            writer = w;
            return { dir: w.dir, addFile: (n, b, s) => w.addFile(n, b as Readable, s), finish: (o) => w.finish(o), discard: () => w.discard() };
          },
        },
      );
      const png = fs.readFileSync(path.join(writer!.filesDir, 'revenue.png'));
      assert.equal(
        r.report.text,
        `stdout:\nbest month: ${data.best} (revenue ${money(data.bestTotal)})\nmonths: 12, total ${money(data.total)}\n\n` +
          `Saved for the user in the CodeAct Sandbox view: revenue.png (${formatBytes(png.length)}). The files are not sent to you; describe them or print what you need from them.`,
      );
      assert.deepEqual(r.files, [{ name: 'revenue.png', size: png.length, mediaType: 'image/png' }]);
      // A real chart: the PNG signature, an IHDR of the size the program asked for (8 x 4.5 in at 100 dpi), and some substance.
      assert.deepEqual(png.subarray(0, 8), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
      assert.equal(png.subarray(12, 16).toString('latin1'), 'IHDR');
      assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [800, 450]);
      assert.ok(png.length > 10 * 1024, `${png.length} bytes`);
      // Kept for a person to look at, like the extension-host suite's screenshots.
      fs.mkdirSync('test-results/docker', { recursive: true });
      fs.writeFileSync('test-results/docker/revenue.png', png);
    });
  });

  it("a missing module gets the hint built from the image's own labels, in the result the model reads", async function () {
    if (made.image.route !== 'debian') this.skip(); // the versions below are Debian bookworm's
    const provider = sandboxes.makeProvider({ spec: () => testSpec({ image: made.image.tag, limits: { ...TEST_LIMITS, memoryMb: 1024 }, packagesSetting: 'codeactSandbox.pythonPackages' }) });
    const r = await run(provider, uniqueSessionKey('hint'), 'import polars');
    assert.equal(
      r.text,
      'stderr:\nTraceback (most recent call last):\n  File "/sandbox/runs/' + r.text.split('/sandbox/runs/')[1]!.slice(0, 11) + '/program.py", line 1, in <module>\n    import polars\nModuleNotFoundError: No module named \'polars\'\n\nexit code: 1\n\n' +
        "The sandbox has no module named 'polars', and it has no network, so pip install cannot work there. Installed packages include beautifulsoup4 4.11.2, Jinja2 3.1.2, lxml 4.9.2, matplotlib 3.6.3, networkx 2.8.8, numpy 1.24.2, odfpy 1.4.2, openpyxl 3.0.9, pandas 1.5.3, Pillow 9.4.0, PyYAML 6.0, scikit-learn 1.2.1, scipy 1.10.1, seaborn 0.12.2, statsmodels 0.13.5+dfsg, sympy 1.11.1, tabulate 0.8.9, tqdm 4.64.1, xlrd 1.2.0 and 32 more. If the program needs polars, ask the user to add \"polars\" to the codeactSandbox.pythonPackages setting.",
    );
  });

  it('an image the user chose (not ours) gets the hint without a list, asking for another image', async function () {
    const provider = sandboxes.makeProvider({ image: IMAGE });
    const r = await run(provider, uniqueSessionKey('hint-chosen'), 'import polars');
    assert.equal(
      r.text.slice(r.text.indexOf('exit code: 1')),
      "exit code: 1\n\nThe sandbox has no module named 'polars', and it has no network, so pip install cannot work there. If the program needs polars, ask the user for a sandbox image that has it.",
    );
  });

});
