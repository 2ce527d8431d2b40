/**
 * One Chromium for all the card's tests, a host page served from 127.0.0.1 (the official AppBridge
 * framing dist/card.html, the page as it ships), and the card's tools answered by each test's
 * fixtures, their inputs and results checked against the contract.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import * as esbuild from 'esbuild';
import { chromium, type BrowserContext, type Frame, type Page } from 'playwright-core';
import type { McpUiHostContext } from '@modelcontextprotocol/ext-apps/app-bridge';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { cardInputs, cardResults, type CardInputs, type CardResults } from '../../src/mcp/card/contract';
import { CARD_TOOL } from '../../src/mcp/card/names';
import { cardHtml } from '../../src/mcp/card/page/html';

export const CHROMIUM = '/usr/bin/chromium';
export const SHOTS = path.resolve(__dirname, '../../test-results/card');

export type Tool = keyof typeof CARD_TOOL;
export type Handlers = { [K in Tool]?: (args: CardInputs[K]) => CardResults[K] | Promise<CardResults[K]> };
export interface Call {
  tool: Tool;
  args: unknown;
}

const TOOL_BY_NAME = new Map(Object.entries(CARD_TOOL).map(([key, name]) => [name as string, key as Tool]));

/** Answers a card's tools/call from the current handlers, as the server would: structuredContent, or isError with a sentence. */
class ToolDesk {
  handlers: Handlers = {};
  calls: Call[] = [];

  async answer(name: string, args: unknown): Promise<CallToolResult> {
    const tool = TOOL_BY_NAME.get(name);
    if (!tool) return { content: [{ type: 'text', text: `no tool ${name}` }], isError: true };
    // The card sends what the contract says, or the test fails here.
    const input = cardInputs[tool].parse(args);
    this.calls.push({ tool, args });
    const handler = this.handlers[tool] as ((a: unknown) => unknown) | undefined;
    if (!handler) return { content: [{ type: 'text', text: `${name} is not answered in this test` }], isError: true };
    try {
      const result = cardResults[tool].parse(await handler(input)) as Record<string, unknown>;
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
    } catch (error) {
      return { content: [{ type: 'text', text: error instanceof Error ? error.message : String(error) }], isError: true };
    }
  }

  of<K extends Tool>(tool: K): CardInputs[K][] {
    return this.calls.filter((c) => c.tool === tool).map((c) => c.args as CardInputs[K]);
  }
}

export interface Opened {
  page: Page;
  card: Frame;
  /** Every URL the page requested, the host page's own included. */
  requests: string[];
  host: string;
}

export class CardHarness {
  context!: BrowserContext;
  server!: http.Server;
  url!: string;
  readonly desk = new ToolDesk();
  private hostPage = '';
  private profile = '';

  async start(): Promise<void> {
    const bundle = await esbuild.build({
      entryPoints: [path.join(__dirname, 'host.ts')],
      bundle: true,
      platform: 'browser',
      format: 'iife',
      write: false,
      logLevel: 'warning',
    });
    const script = bundle.outputFiles[0]!.text.replace(/<\/script/gi, '<\\/script');
    this.hostPage = [
      '<!doctype html><html><head><meta charset="utf-8"><title>card host</title><style>',
      // The chat's panel around the card: light or dark, as the theme the test gives the host.
      'body{margin:0;padding:12px;background:#f8f8f8;width:680px}body[data-theme=dark]{background:#181818}',
      'iframe{display:block;border:0;width:100%;height:40px}',
      `</style></head><body><script>${script}</script></body></html>`,
    ].join('');
    this.server = http.createServer((req, res) => {
      if (req.url === '/') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(this.hostPage);
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    assert.ok(address && typeof address === 'object');
    this.url = `http://127.0.0.1:${address.port}/`;
    // A new, empty profile each run: nothing cached or configured from before.
    this.profile = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-card-chromium-'));
    this.context = await chromium.launchPersistentContext(this.profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 704, height: 600 },
      deviceScaleFactor: 1,
    });
    await this.context.exposeBinding('cardTool', (_source, name: string, args: unknown) => this.desk.answer(name, args));
    // In every frame, the card's too: what its content security policy refused (a request it tried).
    await this.context.addInitScript(() => {
      const w = window as unknown as { cardViolations: string[] };
      w.cardViolations = [];
      document.addEventListener('securitypolicyviolation', (e) => w.cardViolations.push(`${e.effectiveDirective} ${e.blockedURI}`));
    });
    fs.mkdirSync(SHOTS, { recursive: true });
  }

  async stop(): Promise<void> {
    await this.context?.close();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    if (this.profile) fs.rmSync(this.profile, { recursive: true, force: true });
  }

  /** A new host page with the card framed and initialized, the tools answered by `handlers`. */
  async open(handlers: Handlers, hostContext: McpUiHostContext): Promise<Opened> {
    this.desk.handlers = handlers;
    this.desk.calls = [];
    const page = await this.context.newPage();
    const requests: string[] = [];
    page.on('request', (request) => requests.push(request.url()));
    await page.goto(this.url);
    await page.evaluate(([html, context]) => window.cardHost.start(html, context), [cardHtml(), hostContext] as const);
    const frame = await (await page.$('iframe'))!.contentFrame();
    assert.ok(frame, 'the card has a frame');
    return { page, card: frame, requests, host: this.url };
  }
}

/** Waits until the host framed the card at its current height (size-changed has arrived), then shoots the host page. */
export async function screenshot(o: Opened, name: string): Promise<void> {
  // Two frames on, the card has laid out and reported its height; the host sizes the frame to it.
  const height = await o.card.evaluate(
    () => new Promise<number>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(Math.ceil(document.documentElement.getBoundingClientRect().height))))),
  );
  await o.page.waitForFunction((h) => document.querySelector('iframe')?.style.height === `${h}px`, height);
  // The whole card inside the viewport: a frame's content below it is not painted for the shot.
  const body = await o.page.evaluate(() => Math.ceil(document.body.getBoundingClientRect().height));
  await o.page.setViewportSize({ width: 704, height: Math.max(200, body) });
  await o.page.locator('body').screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

/** Waits until the element's text is exactly `expected`; on timeout, says what it was. */
export async function waitText(frame: Frame, selector: string, expected: string, timeout = 10_000): Promise<void> {
  try {
    await frame.waitForFunction(([s, t]) => document.querySelector(s)?.textContent === t, [selector, expected] as const, { timeout });
  } catch {
    const actual = await frame.evaluate((s) => document.querySelector(s)?.textContent ?? null, selector);
    assert.equal(actual, expected, `text of ${selector}`);
  }
}

export async function texts(frame: Frame, selector: string): Promise<string[]> {
  return frame.$$eval(selector, (nodes) => nodes.map((n) => n.textContent ?? ''));
}

/** A light and a dark host context as VS Code's look gives them (its colours, resolved). */
export function hostContext(theme: 'light' | 'dark'): McpUiHostContext {
  const light = theme === 'light';
  return {
    theme,
    displayMode: 'inline',
    styles: {
      variables: {
        '--color-background-primary': light ? '#ffffff' : '#1f1f1f',
        '--color-background-secondary': light ? '#f3f3f3' : '#2b2b2b',
        '--color-text-primary': light ? '#3b3b3b' : '#cccccc',
        '--color-text-secondary': light ? '#717171' : '#9d9d9d',
        '--color-border-primary': light ? '#e5e5e5' : '#3c3c3c',
        '--color-text-danger': light ? '#c42b1c' : '#f85149',
        '--font-sans': 'system-ui, "Segoe UI", sans-serif',
        '--font-mono': '"DejaVu Sans Mono", monospace',
      } as NonNullable<McpUiHostContext['styles']>['variables'],
    },
  };
}
