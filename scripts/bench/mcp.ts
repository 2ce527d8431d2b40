/**
 * An MCP connection's first call against its later ones: the bundled server (`cli.js mcp`) with
 * the SDK's own client over stdio, as an MCP host runs it. The server makes its sandbox when the
 * client connects; the bench leaves the pause a model's first answer takes (THINK_MS) before
 * the first call, and a model's shorter pause (GAP_MS) between the later ones.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { stat, type Stat } from './stats';

const THINK_MS = 2_000;
const GAP_MS = 300;
const WARM_CALLS = 5;

export interface McpBench {
  /** `mcp.<runtime>.firstCall` and `mcp.<runtime>.warmCall`. */
  results: Record<string, Stat>;
  ratios: Record<string, number>;
}

function text(r: unknown): string {
  const content = (r as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.map((c) => c.text ?? '').join('');
}

export async function benchMcp(cli: string, image: string, connections: number, runtimes: readonly string[]): Promise<McpBench> {
  const results: Record<string, Stat> = {};
  const ratios: Record<string, number> = {};
  for (const runtime of runtimes) {
    const firsts: number[] = [];
    const warm: number[] = [];
    for (let i = 0; i < connections; i++) {
      const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
      const transport = new StdioClientTransport({ command: process.execPath, args: [cli, 'mcp', '--image', image, '--runtime', runtime], env, stderr: 'ignore' });
      const client = new Client({ name: 'codeact-bench', version: '1.0.0' });
      await client.connect(transport);
      try {
        await client.listTools();
        await new Promise((r) => setTimeout(r, THINK_MS));
        const call = async () => {
          const t = performance.now();
          const r = await client.callTool({ name: 'execute_code', arguments: { code: 'print(1)' } }, undefined, { timeout: 120_000 });
          const ms = performance.now() - t;
          if (text(r) !== 'stdout:\n1') throw new Error(`mcp ${runtime}: unexpected result ${JSON.stringify(text(r).slice(0, 200))}`);
          return ms;
        };
        firsts.push(await call());
        for (let k = 0; k < WARM_CALLS; k++) {
          await new Promise((r) => setTimeout(r, GAP_MS));
          warm.push(await call());
        }
      } finally {
        await client.close();
      }
    }
    results[`mcp.${runtime}.firstCall`] = stat(firsts);
    results[`mcp.${runtime}.warmCall`] = stat(warm);
    ratios[`MCP, ${runtime}: a connection's first call / its later calls (target <= 2)`] = stat(firsts).median / stat(warm).median;
  }
  return { results, ratios };
}
