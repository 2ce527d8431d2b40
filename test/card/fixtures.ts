/** What the card's tests hand it: card data as the server makes it, files, a 10,000-row table. */
import type { BrowserContext } from 'playwright-core';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CardData, CardInputs, CardResults } from '../../src/mcp/card/contract';
import { CARD_META_KEY } from '../../src/mcp/card/names';

export const CARD = 'card-token-0123456789abcdef';
export const CLAIM = 'claim-token-0123456789abcdef';

export function cardData(over: Partial<CardData> = {}): CardData {
  return {
    v: 1,
    card: CARD,
    status: 'ok',
    exitCode: 0,
    durationMs: 2300,
    startedAt: '2026-12-07T10:00:00.000Z',
    image: 'codeact-sandbox/python:bookworm',
    chat: 'Sales by city',
    stdout: '',
    stderr: '',
    stdoutOmitted: 0,
    stderrOmitted: 0,
    files: [],
    notSaved: [],
    notes: [],
    ...over,
  };
}

/** A finished call's result as the server returns it: the model's text, the card's data in _meta. */
export function toolResult(data: CardData, text = 'exit code 0'): CallToolResult {
  return { content: [{ type: 'text', text }], _meta: { [CARD_META_KEY]: data } };
}

/** A bar chart drawn by the browser's canvas, as PNG bytes (base64), 640 by 360. */
export async function chartPng(context: BrowserContext): Promise<string> {
  const page = await context.newPage();
  try {
    const url = await page.evaluate(() => {
      const canvas = document.createElement('canvas');
      canvas.width = 640;
      canvas.height = 360;
      const g = canvas.getContext('2d')!;
      g.fillStyle = '#ffffff';
      g.fillRect(0, 0, 640, 360);
      g.fillStyle = '#222222';
      g.font = '18px sans-serif';
      g.fillText('Sales by city', 250, 30);
      g.strokeStyle = '#444444';
      g.beginPath();
      g.moveTo(60, 50);
      g.lineTo(60, 320);
      g.lineTo(620, 320);
      g.stroke();
      const values = [120, 200, 150, 80, 240];
      const names = ['Lyon', 'Oslo', 'Lima', 'Pune', 'Kobe'];
      values.forEach((v, i) => {
        g.fillStyle = '#1f77b4';
        g.fillRect(90 + i * 105, 320 - v, 60, v);
        g.fillStyle = '#222222';
        g.font = '13px sans-serif';
        g.fillText(names[i]!, 100 + i * 105, 340);
      });
      return canvas.toDataURL('image/png');
    });
    return url.slice('data:image/png;base64,'.length);
  } finally {
    await page.close();
  }
}

const CITIES = ['Lyon', 'Oslo', 'Lima', 'Pune', 'Kobe'];
export const TABLE_ROWS = 10_000;
/** sales.csv: id 1..10000, a city, a number; as card_table reads it. */
export const SALES = {
  columns: ['id', 'city', 'sales'],
  rows: Array.from({ length: TABLE_ROWS }, (_, i) => [String(i + 1), CITIES[i % 5]!, String(((i + 1) * 7919) % 1000)]),
};

/** card_table over a table held in memory: sorted by a column (numbers as numbers), then a page. */
export function tablePages(table: { columns: string[]; rows: string[][] }, truncated = false) {
  return (args: CardInputs['table']): CardResults['table'] => {
    let rows = table.rows;
    if (args.sort) {
      const { column, descending } = args.sort;
      const numeric = rows.every((r) => r[column] !== undefined && r[column] !== '' && !Number.isNaN(Number(r[column])));
      rows = [...rows].sort((a, b) => {
        const x = a[column] ?? '';
        const y = b[column] ?? '';
        const order = numeric ? Number(x) - Number(y) : x < y ? -1 : x > y ? 1 : 0;
        return descending ? -order : order;
      });
    }
    return { columns: table.columns, rows: rows.slice(args.offset, args.offset + args.limit), total: table.rows.length, offset: args.offset, truncated };
  };
}

/** Output and names a hostile program could print or save, each of which must stay text. */
export const HOSTILE_STDOUT = '</textarea><script>window.pwned=1</script><img src=x onerror="window.pwned=2">';
export const HOSTILE_STDERR = '<iframe srcdoc="<script>parent.pwned=5</script>"></iframe><b>bold?</b>';
export const HOSTILE_FILE = 'report ```\n</code><img src=x onerror="window.pwned=3">.csv';
export const HOSTILE_NOTE = '<a href="javascript:window.pwned=6">state kept</a> ```js\nalert(1)\n```';
export const HOSTILE_HOST = '<img src=x onerror=window.pwned=7>.example';
/** An SVG whose script would set window.pwned if it ran: shown by <img>, it must not. */
export const HOSTILE_SVG = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" width="160" height="40"><script>window.pwned=4;parent.pwned=4</script>' +
    '<rect width="160" height="40" fill="#2e7d32"/><text x="10" y="26" fill="#ffffff" font-size="16">svg shown</text></svg>',
).toString('base64');

/** A card with everything a data run can show, for the look in light and dark. */
export function fullCard(pngBytes: number): CardData {
  return cardData({
    stdout: '        city   sales\n0       Lyon  49,120\n1       Oslo  51,873\n2       Lima  48,990\nSaved chart.png and sales.csv\n',
    stderr: "FutureWarning: The default of observed=False is deprecated\n",
    files: [
      { name: 'chart.png', size: pngBytes, mediaType: 'image/png', kind: 'image' },
      { name: 'sales.csv', size: 148_894, mediaType: 'text/csv', kind: 'table' },
      { name: 'summary.xlsx', size: 5_310, kind: 'other' },
    ],
    notSaved: [{ name: 'report.pdf', reason: 'not written' }],
    network: {
      connections: [
        { host: 'files.example.org', port: 443, allowed: true, bytesOut: 1_930, bytesIn: 2_483_112, count: 2 },
        { host: 'tracker.example.net', port: 443, allowed: false, reason: 'not allowed', bytesOut: 0, bytesIn: 0 },
      ],
      omitted: 0,
    },
    notes: ['Python state kept: the next call continues from here (df, chart).'],
  });
}
