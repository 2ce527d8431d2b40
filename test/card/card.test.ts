/**
 * The run card (src/mcp/card/page/, as built into dist/card.html) in Chromium, framed and driven
 * by the official MCP Apps host (AppBridge), its tools answered from fixtures. Everything is read
 * from the card's DOM.
 */
import * as assert from 'node:assert/strict';
import type { CardResults } from '../../src/mcp/card/contract';
import {
  CARD,
  CLAIM,
  HOSTILE_FILE,
  HOSTILE_HOST,
  HOSTILE_NOTE,
  HOSTILE_STDERR,
  HOSTILE_STDOUT,
  HOSTILE_SVG,
  SALES,
  cardData,
  chartPng,
  fullCard,
  tablePages,
  toolResult,
} from './fixtures';
import { CardHarness, hostContext, screenshot, texts, waitText, type Opened } from './harness';

const harness = new CardHarness();
let png = '';
let opened: Opened | undefined;

/** Nothing left the frame: the host page is the only request, and the card's policy refused nothing. */
async function assertNoRequests(o: Opened): Promise<void> {
  assert.deepEqual(await o.card.evaluate(() => (window as unknown as { cardViolations?: string[] }).cardViolations), []);
  assert.deepEqual(o.requests, [o.host]);
}

async function open(...args: Parameters<CardHarness['open']>): Promise<Opened> {
  opened = await harness.open(...args);
  return opened;
}

/** Resolves when the card's <img alt=name> has decoded. */
async function imageShown(o: Opened, alt: string): Promise<void> {
  await o.card.waitForFunction((a) => {
    const img = [...document.querySelectorAll('img')].find((i) => i.alt === a);
    return img !== undefined && img.complete && img.naturalWidth > 0;
  }, alt);
}

describe('run card page (Chromium, hosted by the MCP Apps AppBridge)', function () {
  this.timeout(30_000);

  before(async function () {
    await harness.start();
    png = await chartPng(harness.context);
  });

  after(async function () {
    await harness.stop();
  });

  afterEach(async function () {
    await opened?.page.close();
    opened = undefined;
  });

  it('shows a chart the run saved as an image, from the bytes card_file gives', async function () {
    const size = Buffer.from(png, 'base64').length;
    const o = await open(
      {
        file: () => ({ mediaType: 'image/png', size, base64: png }),
        action: (a) => ({ done: true, message: a.action === 'save' ? 'Saved chart.png to the workspace.' : 'Opened the chat as a notebook.' }),
      },
      hostContext('light'),
    );
    await o.page.evaluate((r) => window.cardHost.result(r), toolResult(cardData({ stdout: 'Saved chart.png\n', files: [{ name: 'chart.png', size, mediaType: 'image/png', kind: 'image' }] })));
    await imageShown(o, 'chart.png');
    assert.deepEqual(
      await o.card.$eval('img', (i) => [i.alt, i.naturalWidth, i.naturalHeight, i.src.slice(0, 22)]),
      ['chart.png', 640, 360, 'data:image/png;base64,'],
    );
    await waitText(o.card, '.head .title', 'Finished in 2.3 s');
    assert.deepEqual(await texts(o.card, 'pre.stdout'), ['Saved chart.png\n']);
    assert.deepEqual(harness.desk.of('file'), [{ card: CARD, name: 'chart.png' }]);

    await o.card.getByRole('button', { name: 'Save to Workspace' }).click();
    await waitText(o.card, '.card > .message', 'Saved chart.png to the workspace.');
    await o.card.getByRole('button', { name: 'Open as Notebook' }).click();
    await waitText(o.card, '.card > .message', 'Opened the chat as a notebook.');
    assert.deepEqual(harness.desk.of('action'), [
      { card: CARD, name: 'chart.png', action: 'save' },
      { card: CARD, action: 'notebook' },
    ]);
    // The host was told the card's height (size-changed), and framed it at that height.
    const height = await o.card.evaluate(() => Math.ceil(document.documentElement.getBoundingClientRect().height));
    await o.page.waitForFunction((h) => window.cardHost.sizes().at(-1) === h, height);
    assert.equal(await o.page.$eval('iframe', (f) => f.style.height), `${height}px`);
    await assertNoRequests(o);
  });

  it('pages and sorts a 10,000-row CSV through card_table, and says the total', async function () {
    const o = await open({ table: tablePages(SALES) }, hostContext('light'));
    await o.page.evaluate((r) => window.cardHost.result(r), toolResult(cardData({ files: [{ name: 'sales.csv', size: 148_894, mediaType: 'text/csv', kind: 'table' }] })));
    const ids = (): Promise<string[]> => texts(o.card, '.table-file tbody tr td:first-child');
    await waitText(o.card, '.pager .range', 'Rows 1–500 of 10,000');
    assert.deepEqual(await texts(o.card, '.table-title .muted'), ['10,000 rows']);
    assert.deepEqual(await texts(o.card, '.table-file th'), ['id', 'city', 'sales']);
    assert.deepEqual(await o.card.$$eval('.table-file th', (ths) => ths.map((th) => th.getAttribute('scope'))), ['col', 'col', 'col']);
    const first = await ids();
    assert.equal(first.length, 500);
    assert.deepEqual([first[0], first[1], first[499]], ['1', '2', '500']);
    assert.deepEqual(await texts(o.card, '.table-file tbody tr:first-child td'), ['1', 'Lyon', '919']);

    await o.card.getByRole('button', { name: 'Next' }).click();
    await waitText(o.card, '.pager .range', 'Rows 501–1,000 of 10,000');
    const second = await ids();
    assert.deepEqual([second.length, second[0], second[499]], [500, '501', '1000']);
    await o.card.getByRole('button', { name: 'Previous' }).click();
    await waitText(o.card, '.pager .range', 'Rows 1–500 of 10,000');

    const header = (name: string) => o.card.locator('.table-file th button', { hasText: name });
    const sortOf = () => o.card.$$eval('.table-file th', (ths) => ths.map((th) => th.getAttribute('aria-sort')));
    await header('id').click();
    await o.card.waitForFunction(() => document.querySelector('.table-file th')?.getAttribute('aria-sort') === 'ascending');
    assert.deepEqual((await ids()).slice(0, 3), ['1', '2', '3']);
    await header('id').click();
    await waitText(o.card, '.table-file tbody tr td', '10000');
    assert.deepEqual((await ids()).slice(0, 3), ['10000', '9999', '9998']);
    assert.deepEqual(await sortOf(), ['descending', null, null]);
    await header('sales').click();
    await waitText(o.card, '.table-file tbody tr td', '1000');
    assert.deepEqual((await ids()).slice(0, 3), ['1000', '2000', '3000']);
    assert.deepEqual(await sortOf(), [null, null, 'ascending']);
    await waitText(o.card, '.pager .range', 'Rows 1–500 of 10,000');

    assert.deepEqual(
      harness.desk.of('table'),
      [
        { offset: 0 },
        { offset: 500 },
        { offset: 0 },
        { offset: 0, sort: { column: 0, descending: false } },
        { offset: 0, sort: { column: 0, descending: true } },
        { offset: 0, sort: { column: 2, descending: false } },
      ].map((a) => ({ card: CARD, name: 'sales.csv', limit: 500, ...a })),
    );
    await assertNoRequests(o);
  });

  it('shows hostile output, file names, notes and hosts as text: nothing in them runs or loads', async function () {
    const html = Buffer.from('<html><script>window.pwned=9</script></html>').toString('base64');
    const o = await open(
      {
        file: (a) => (a.name === 'evil.svg' ? { mediaType: 'image/svg+xml', size: 300, base64: HOSTILE_SVG } : { mediaType: 'text/html', size: 44, base64: html }),
        table: tablePages({ columns: ['<b>col</b>'], rows: [['<img src=x onerror="window.pwned=8">']] }),
      },
      hostContext('light'),
    );
    const data = cardData({
      status: 'failed',
      exitCode: 1,
      durationMs: 812,
      stdout: HOSTILE_STDOUT,
      stderr: HOSTILE_STDERR,
      stdoutOmitted: 1234,
      files: [
        { name: HOSTILE_FILE, size: 120, mediaType: 'text/csv', kind: 'table' },
        { name: 'evil.svg', size: 300, mediaType: 'image/svg+xml', kind: 'image' },
        { name: 'page.png', size: 44, mediaType: 'image/png', kind: 'image' },
      ],
      notSaved: [{ name: '<script>window.pwned=10</script>.png', reason: 'not written' }],
      network: { connections: [{ host: HOSTILE_HOST, port: 443, allowed: false, reason: 'not allowed', bytesOut: 0, bytesIn: 0 }], omitted: 0 },
      notes: [HOSTILE_NOTE],
    });
    await o.page.evaluate((r) => window.cardHost.result(r), toolResult(data));
    await imageShown(o, 'evil.svg');
    await waitText(o.card, '.pager .range', 'Rows 1–1 of 1');
    await waitText(o.card, 'figure:nth-child(2) [role=status]', 'Not shown: text/html is not an image type the card shows.');

    await waitText(o.card, '.head .title', 'Failed after 0.8 s · exit code 1');
    assert.deepEqual(await texts(o.card, 'pre.stdout'), [HOSTILE_STDOUT]);
    assert.deepEqual(await texts(o.card, 'pre.stderr'), [HOSTILE_STDERR]);
    assert.deepEqual(await texts(o.card, '.stream-box.stdout .left-out'), ['1,234 characters left out']);
    assert.deepEqual(await texts(o.card, '.chip .name'), [HOSTILE_FILE, 'evil.svg', 'page.png']);
    assert.deepEqual(await texts(o.card, '.table-file .table-title .name'), [HOSTILE_FILE]);
    assert.deepEqual(await texts(o.card, '.table-file th'), ['<b>col</b>']);
    assert.deepEqual(await texts(o.card, '.table-file td'), ['<img src=x onerror="window.pwned=8">']);
    assert.deepEqual(await texts(o.card, '.not-saved li'), ['<script>window.pwned=10</script>.png — not written']);
    assert.deepEqual(await texts(o.card, '.network tbody td:first-child'), [HOSTILE_HOST]);
    assert.deepEqual(await texts(o.card, '.notes p'), [HOSTILE_NOTE]);
    // Nothing from the data became an element: one script (the card's own), images only from data: URLs.
    assert.deepEqual(
      await o.card.evaluate(() => ({
        pwned: (window as unknown as { pwned?: unknown }).pwned,
        scripts: document.querySelectorAll('script').length,
        images: [...document.querySelectorAll('img')].map((i) => `${i.alt} ${i.src.slice(0, 26)}`),
        made: document.querySelectorAll('iframe, a, b, textarea, code, svg, object, embed, link').length,
      })),
      { pwned: undefined, scripts: 1, images: ['evil.svg data:image/svg+xml;base64,'], made: 0 },
    );
    assert.equal(await o.page.evaluate(() => (window as unknown as { pwned?: unknown }).pwned), undefined);
    await screenshot(o, 'hostile');
    await assertNoRequests(o);
  });

  it('shows the call while it runs: output as it comes, Stop, then the result', async function () {
    const polls: { args: unknown; answer: (r: CardResults['poll']) => void }[] = [];
    let arrived: () => void = () => {};
    const nextPoll = async (): Promise<(typeof polls)[number]> => {
      while (polls.length === 0) await new Promise<void>((resolve) => (arrived = resolve));
      return polls.shift()!;
    };
    const o = await open(
      {
        live: () => ({ claim: CLAIM }),
        poll: (args) =>
          new Promise((answer) => {
            polls.push({ args, answer });
            arrived();
          }),
        stop: () => ({ stopping: true }),
      },
      hostContext('dark'),
    );
    const input = { code: 'import time\nfor i in range(2):\n    print("step", i)\n', outputs: ['chart.png'] };
    await o.page.evaluate((a) => window.cardHost.input(a), input);
    await waitText(o.card, '.head .title', 'Running 3 lines of Python…');

    const first = await nextPoll();
    assert.deepEqual(harness.desk.of('live'), [{ input }]);
    assert.deepEqual(first.args, { claim: CLAIM, stdoutFrom: 0, stderrFrom: 0 });
    first.answer({ running: true, elapsedMs: 400, stdout: 'step one\n', stderr: '', stdoutFrom: 9, stderrFrom: 0 });
    await waitText(o.card, 'pre.stdout', 'step one\n');

    const second = await nextPoll();
    assert.deepEqual(second.args, { claim: CLAIM, stdoutFrom: 9, stderrFrom: 0 });
    second.answer({ running: true, elapsedMs: 800, stdout: 'step two\n', stderr: 'a warning\n', stdoutFrom: 18, stderrFrom: 10 });
    await waitText(o.card, 'pre.stdout', 'step one\nstep two\n');
    await waitText(o.card, 'pre.stderr', 'a warning\n');
    await screenshot(o, 'running');

    const third = await nextPoll();
    assert.deepEqual(third.args, { claim: CLAIM, stdoutFrom: 18, stderrFrom: 10 });
    // Stop while a poll is still out: the person's Stop does not wait for it.
    await o.card.getByRole('button', { name: 'Stop' }).click();
    await waitText(o.card, 'button.stop', 'Stopping…');
    assert.deepEqual(harness.desk.of('stop'), [{ claim: CLAIM }]);
    third.answer({ running: false, elapsedMs: 1200, stdout: '', stderr: '', stdoutFrom: 18, stderrFrom: 10 });
    await waitText(o.card, '.head .title', 'Finishing…');

    await o.page.evaluate(
      (r) => window.cardHost.result(r),
      toolResult(cardData({ status: 'stopped', exitCode: null, durationMs: 1234, stdout: 'step one\nstep two\n', stderr: 'a warning\n' })),
    );
    await waitText(o.card, '.head .title', 'Stopped after 1.2 s');
    assert.deepEqual(await texts(o.card, 'pre.stdout'), ['step one\nstep two\n']);
    assert.equal(harness.desk.of('poll').length, 3);
    await assertNoRequests(o);
  });

  it('without a claim shows the running line alone, and a cancelled call says so', async function () {
    const o = await open({ live: () => ({}) }, hostContext('light'));
    await o.page.evaluate((a) => window.cardHost.input(a), { code: 'print(1)' });
    await waitText(o.card, '.head .title', 'Running 1 line of Python…');
    assert.equal(await o.card.$eval('button.stop', (b) => (b as HTMLButtonElement).hidden), true);
    assert.deepEqual(harness.desk.of('live'), [{ input: { code: 'print(1)' } }]);
    await o.page.evaluate((reason) => window.cardHost.cancelled(reason), 'The person cancelled the call.');
    await waitText(o.card, '.head .title', 'Cancelled');
    assert.deepEqual(await texts(o.card, '.card > p'), ['The person cancelled the call.']);
    assert.deepEqual(harness.desk.of('poll'), []);
    await assertNoRequests(o);
  });

  it('follows the host theme: its variables in light, then dark on host-context-changed', async function () {
    const size = Buffer.from(png, 'base64').length;
    const handlers = { file: () => ({ mediaType: 'image/png', size, base64: png }), table: tablePages(SALES) };
    const o = await open(handlers, hostContext('light'));
    await o.page.evaluate((r) => window.cardHost.result(r), toolResult(fullCard(size)));
    await imageShown(o, 'chart.png');
    await waitText(o.card, '.pager .range', 'Rows 1–500 of 10,000');
    const look = () =>
      o.card.evaluate(() => {
        const card = getComputedStyle(document.querySelector('.card')!);
        return [document.documentElement.dataset.theme, card.backgroundColor, card.color, getComputedStyle(document.querySelector('pre.stderr')!).color];
      });
    assert.deepEqual(await look(), ['light', 'rgb(255, 255, 255)', 'rgb(59, 59, 59)', 'rgb(196, 43, 28)']);
    assert.deepEqual(await texts(o.card, '.chip .name'), ['chart.png', 'sales.csv', 'summary.xlsx']);
    assert.deepEqual(await texts(o.card, '.network summary'), ['Network: 2 connections · 1 refused']);
    assert.deepEqual(await texts(o.card, '.network tbody tr:first-child td'), ['files.example.org', '443', 'allowed', '1.9 KB', '2.4 MB', '2']);
    assert.deepEqual(await texts(o.card, '.network tbody tr:last-child td'), ['tracker.example.net', '443', 'refused (not allowed)', '0 B', '0 B', '1']);
    await screenshot(o, 'light');

    await o.page.evaluate((c) => window.cardHost.context(c), hostContext('dark'));
    await o.card.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
    assert.deepEqual(await look(), ['dark', 'rgb(31, 31, 31)', 'rgb(204, 204, 204)', 'rgb(248, 81, 73)']);
    await screenshot(o, 'dark');
    await assertNoRequests(o);
  });

  it('makes no request, even when a host style variable names a URL', async function () {
    const size = Buffer.from(png, 'base64').length;
    const handlers = {
      file: (a: { name: string }) => (a.name === 'evil.svg' ? { mediaType: 'image/svg+xml', size: 300, base64: HOSTILE_SVG } : { mediaType: 'image/png', size, base64: png }),
      table: tablePages(SALES),
    };
    const context = hostContext('light');
    const at = harness.url;
    // A value that would load an image were it set: the card sets only values that load nothing.
    Object.assign(context.styles!.variables!, {
      '--color-background-primary': `url(${at}from-variable.png) #ffffff`,
      '--color-background-secondary': `u\\72l(${at}escaped.png) #f3f3f3`,
    });
    const o = await open(handlers, context);
    const data = fullCard(size);
    data.files.push({ name: 'evil.svg', size: 300, mediaType: 'image/svg+xml', kind: 'image' });
    await o.page.evaluate((r) => window.cardHost.result(r), toolResult(data));
    await imageShown(o, 'chart.png');
    await imageShown(o, 'evil.svg');
    await waitText(o.card, '.pager .range', 'Rows 1–500 of 10,000');
    await assertNoRequests(o);
    assert.deepEqual(
      await o.card.evaluate(() => [getComputedStyle(document.querySelector('.card')!).backgroundImage, getComputedStyle(document.querySelector('pre.stream')!).backgroundImage]),
      ['none', 'none'],
    );
  });

  it('shows a result without card data as its text', async function () {
    const o = await open({}, hostContext('light'));
    const text = 'No sandbox engine answers at unix:///var/run/docker.sock: start Docker, then call again.';
    await o.page.evaluate((r) => window.cardHost.result(r), { content: [{ type: 'text' as const, text }], isError: true });
    await waitText(o.card, '.head .title', 'Failed');
    assert.deepEqual(await texts(o.card, 'pre.stderr'), [text]);
    await assertNoRequests(o);
  });
});
