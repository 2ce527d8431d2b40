/**
 * The chat's run card against the plain tool: the same call (a small chart saved as a file), once
 * through the pipeline as the language-model tool runs it, once through the card's door: the SDK's
 * client over the loopback HTTP door, the card's handler (its live view, its card data), then the
 * same pipeline. Both record the run in a store. `npm run bench` runs it with the rest; on its own:
 * `tsx scripts/bench/card.ts` (BENCH_IMAGE, BENCH_N as for the bench).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type Dockerode from 'dockerode';
import { DEFAULTS, type SandboxLimits } from '../../src/core/limits';
import { silentLogger } from '../../src/core/logger';
import { executeToolCall } from '../../src/core/toolCall';
import { parseToolInput, type ToolInput } from '../../src/core/toolInput';
import { createDockerClient } from '../../src/docker/engine/connection';
import { currentOwner } from '../../src/docker/container/labels';
import { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { CARD_META_KEY, LiveCalls, cardExecuteHandler, createMcpServer, openLoopback, registerExecuteCode, type CardCalls } from '../../src/mcp';
import { ArtifactStore } from '../../src/storage/artifactStore';
import { RunRecording } from '../../src/storage/runRecorder';
import { folderSource } from '../../src/storage/workspaceFolder';
import { STANDALONE, printRatios, printTable, runStandalone, stat, type Stat } from './stats';

const RUN_LIMITS = { timeoutMs: 120_000, outputBudgetBytes: DEFAULTS.outputBudgetBytes, maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024 };
/** What a person asks of a chart, small: a PNG the program writes itself (no plotting library needed). */
const CHART = [
  'import struct, zlib',
  'w, h = 64, 32',
  'raw = b"".join(b"\\0" + b"\\x10\\x20\\x30" * w for _ in range(h))',
  'c = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))',
  'open("chart.png", "wb").write(b"\\x89PNG\\r\\n\\x1a\\n" + c(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + c(b"IDAT", zlib.compress(raw)) + c(b"IEND", b""))',
  'print("drawn")',
].join('\n');
const INPUT = { code: CHART, outputs: ['chart.png'] };

export interface CardBench {
  results: Record<string, Stat>;
  ratios: Record<string, number>;
}

export async function benchCard(docker: Dockerode, image: string, n: number, version: string, limits: SandboxLimits): Promise<CardBench> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-bench-card-'));
  const store = new ArtifactStore(root);
  const provider = new DockerSandboxProvider({
    docker,
    owner: currentOwner('cli', version),
    spec: () => ({ image, limits, warmRunner: true, preloadModules: [...DEFAULTS.preloadModules] }),
    imageSettingHint: 'BENCH_IMAGE',
    log: silentLogger,
    idleMs: 0,
  });
  // The call as the window's host makes it: the pipeline, its record and its saved files.
  const run = async (input: ToolInput, sessionKey: string, signal: AbortSignal, onOutput?: (stream: 'stdout' | 'stderr', chunk: Buffer) => void) => {
    const recording = new RunRecording(store, sessionKey);
    const { report, files } = await executeToolCall(
      provider,
      silentLogger,
      input,
      {
        sessionKey,
        limits: RUN_LIMITS,
        memoryMb: limits.memoryMb,
        filesIn: { source: folderSource(root), caps: { denyGlobs: [], maxFiles: 1, maxFileBytes: 1, maxTotalBytes: 1 } },
        filesOut: { mode: 'declared', caps: { maxFiles: 5, maxFileBytes: 8 << 20, maxTotalBytes: 8 << 20 }, savedWhere: 'in the bench' },
        record: recording.record,
        ...(onOutput ? { onOutput } : {}),
      },
      signal,
    );
    const begun = recording.begun!;
    return { report, text: report.text, images: [], run: { chat: begun.sessionDigest, runId: begun.runId }, files };
  };
  const calls: CardCalls = {
    run: (c) => run(c.input, c.sessionKey, c.signal, c.onOutput),
    cardToken: (chat, runId) => store.cardToken(chat, runId),
    fallbackKey: 'bench:card',
    log: silentLogger,
    client: 'vscode',
  };
  const live = new LiveCalls();
  const door = await openLoopback(() => {
    const server = createMcpServer(version, { card: true });
    registerExecuteCode(server, cardExecuteHandler(calls, live), { door: { live, run: () => undefined, act: async () => ({ done: false, message: '' }) }, html: () => '' });
    return server;
  }, silentLogger);
  const client = new Client({ name: 'codeact-bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(door.url), { requestInit: { headers: door.headers } }));
  const key = `bench:card:${process.pid}`;
  const conversation = { 'vscode.conversationId': `bench-${process.pid}` };
  try {
    const plain = async () => {
      const r = await run(parseToolInput(INPUT), key, new AbortController().signal);
      if (!r.text.startsWith('stdout:\ndrawn')) throw new Error(`plain: ${r.text.slice(0, 200)}`);
    };
    const card = async () => {
      const r = await client.callTool({ name: 'execute_code', arguments: INPUT, _meta: conversation }, undefined, { timeout: 120_000 });
      if (!(r._meta as Record<string, unknown> | undefined)?.[CARD_META_KEY]) throw new Error(`card: no card data in ${JSON.stringify(r).slice(0, 200)}`);
    };
    // Each in a warm sandbox of its own, taken in turns so that neither gets the quieter machine.
    for (let i = 0; i < 3; i++) {
      await plain();
      await card();
    }
    const results: Record<string, Stat> = {};
    const plainMs: number[] = [];
    const cardMs: number[] = [];
    for (let i = 0; i < n; i++) {
      plainMs.push(await timed(plain));
      cardMs.push(await timed(card));
    }
    results['card.plainTool (a chart saved)'] = stat(plainMs);
    results['card.runCard (the same, through the card door)'] = stat(cardMs);
    return {
      results,
      ratios: { "the run card's call / the plain tool's (target <= 1.2)": stat(cardMs).median / stat(plainMs).median },
    };
  } finally {
    await client.close();
    await door.close();
    await provider.dispose();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

export function printCard(b: CardBench): void {
  printTable('the run card against the plain tool', Object.entries(b.results));
  printRatios(b.ratios);
}

if (require.main === module) {
  runStandalone(benchCard(createDockerClient(), STANDALONE.image, STANDALONE.n(30), STANDALONE.version, STANDALONE.limits), printCard);
}
