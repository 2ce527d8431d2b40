/**
 * The load VS Code produces: one provider, several chats at once, each with several tool calls in
 * flight (agent mode issues parallel calls), a mix of programs. Every answer is checked exactly.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { executeCode } from '../../src/core/executeCode';
import { DEFAULTS } from '../../src/core/limits';
import { silentLogger } from '../../src/core/logger';
import type { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { cpuSnapshot, cpuSpent, type CpuSpent } from './cpu';
import { stat, type Stat } from './stats';

const execFileP = promisify(execFile);

export type Kind = 'print' | 'pandas' | 'timeout' | 'memoryHog';

const TIMEOUT_S = 1;

export function programs(memoryMb: number): Record<Kind, { code: string; timeoutMs: number; expect: string }> {
  return {
    print: { code: 'print(1)', timeoutMs: 60_000, expect: 'stdout:\n1' },
    pandas: {
      code: 'import pandas as pd\nprint(pd.DataFrame({"a": range(1000), "b": range(1000)}).sum())',
      timeoutMs: 60_000,
      expect: 'stdout:\na    499500\nb    499500\ndtype: int64',
    },
    timeout: {
      code: 'import time\nprint("waiting", flush=True)\ntime.sleep(60)',
      timeoutMs: TIMEOUT_S * 1000,
      expect: `stdout:\nwaiting\n\nThe program did not finish within ${TIMEOUT_S} s and was stopped. Make it faster, work on less data, or print partial results as you go.`,
    },
    memoryHog: {
      // Written, not only allocated: untouched pages would never count against the limit.
      code: `b = b"x" * (${memoryMb * 2} * 1024 * 1024)\nprint(len(b))`,
      timeoutMs: 60_000,
      expect: `exit code: 137\n\nThe program was killed because it used more than the sandbox's ${memoryMb} MB memory limit. Process the data in smaller pieces.`,
    },
  };
}

/** 20 calls of one chat: half print, a quarter pandas, and a timeout and a memory hog in each ten. */
export const MIX: Kind[] = ['print', 'pandas', 'print', 'timeout', 'print', 'pandas', 'print', 'memoryHog', 'print', 'pandas'];
/** The same calls without the timeouts and memory hogs: what is left when nothing in a chat is slow. */
export const QUICK_MIX: Kind[] = MIX.map((k) => (k === 'timeout' || k === 'memoryHog' ? 'print' : k));

export interface LoadResult {
  chats: number;
  callsPerChat: number;
  inFlightPerChat: number;
  calls: number;
  failures: string[];
  /** Per program kind that the mix has. */
  latency: Partial<Record<Kind, Stat>>;
  wallMs: number;
  /** Memory of one idle chat sandbox (median of the chats'), and of every sandbox of the provider. */
  idleSandboxMb: number;
  wholeSetMb: number;
  sandboxes: number;
  /** The CPU the calls cost, by part (cpu.ts). */
  cpu: CpuSpent;
}

export async function loadCase(provider: DockerSandboxProvider, memoryMb: number, chats = 5, callsPerChat = 20, inFlight = 3, mix: readonly Kind[] = MIX): Promise<LoadResult> {
  const progs = programs(memoryMb);
  const ms: Record<Kind, number[]> = { print: [], pandas: [], timeout: [], memoryHog: [] };
  const failures: string[] = [];
  const run = async (chat: number, kind: Kind) => {
    const p = progs[kind];
    const t = performance.now();
    try {
      const r = await executeCode(provider, silentLogger, { code: p.code, sessionKey: `bench:load:${process.pid}:${chat}`, memoryMb }, {
        timeoutMs: p.timeoutMs,
        outputBudgetBytes: DEFAULTS.outputBudgetBytes,
        maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024,
      });
      if (r.text !== p.expect) failures.push(`chat ${chat} ${kind}: ${JSON.stringify(r.text.slice(0, 300))}`);
    } catch (e) {
      failures.push(`chat ${chat} ${kind}: ${e instanceof Error ? e.message : String(e)}`);
    }
    ms[kind].push(performance.now() - t);
  };
  const sandboxIds = () => [...[...provider.active.values()].map((s) => s.id), ...provider.spareIds];
  const cpuBefore = cpuSnapshot(sandboxIds());
  const started = performance.now();
  await Promise.all(
    Array.from({ length: chats }, async (_, chat) => {
      const queue = Array.from({ length: callsPerChat }, (_, i) => mix[(i + chat) % mix.length]!);
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          for (let kind = queue.shift(); kind; kind = queue.shift()) await run(chat, kind);
        }),
      );
    }),
  );
  const wallMs = performance.now() - started;
  const cpu = cpuSpent(cpuBefore, cpuSnapshot(sandboxIds()));
  // Idle now: what the set costs while the chats think.
  await new Promise((r) => setTimeout(r, 2000));
  const ids = sandboxIds();
  const mem = await Promise.all(ids.map(memoryMb_));
  const chatMem = mem.slice(0, provider.active.size).sort((a, b) => a - b);
  return {
    chats,
    callsPerChat,
    inFlightPerChat: inFlight,
    calls: chats * callsPerChat,
    failures,
    latency: Object.fromEntries(Object.entries(ms).filter(([, v]) => v.length).map(([k, v]) => [k, stat(v)])) as Partial<Record<Kind, Stat>>,
    wallMs,
    idleSandboxMb: chatMem[chatMem.length >> 1] ?? 0,
    wholeSetMb: mem.reduce((a, b) => a + b, 0),
    sandboxes: ids.length,
    cpu,
  };
}

/** The container's memory as `docker stats` shows it (its cgroup's usage less the page cache). */
async function memoryMb_(id: string): Promise<number> {
  const { stdout } = await execFileP('docker', ['stats', '--no-stream', '--format', '{{.MemUsage}}', id]);
  const m = /^([0-9.]+)\s*([KMG]i?B)/.exec(stdout.trim());
  if (!m) throw new Error(`docker stats said ${stdout}`);
  const unit = { KiB: 1 / 1024, MiB: 1, GiB: 1024, KB: 1 / 1000, MB: 1, GB: 1000 }[m[2]!] ?? 1;
  return Number(m[1]) * unit;
}
