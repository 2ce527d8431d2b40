/**
 * What preloading costs an idle sandbox: how long the warm runner takes from the container's
 * start to "ready", and the memory the idle sandbox holds, for the default preload list and the
 * candidates. `npx tsx scripts/preload-cost.ts IMAGE` (the data image: findDataImage's tag).
 */
import { createDockerClient } from '../src/docker/engine/connection';
import { DockerSandboxProvider } from '../src/docker/pool/dockerSandboxProvider';
import { currentOwner } from '../src/docker/container/labels';
import type { Logger } from '../src/core/logger';

const SETS: Record<string, string[]> = {
  none: [],
  before: ['numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot'],
  after: ['numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot', 'scipy', 'PIL.Image', 'openpyxl'],
  all: ['numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot', 'scipy', 'sympy', 'PIL.Image', 'openpyxl', 'lxml.etree', 'bs4', 'yaml', 'networkx', 'tqdm', 'tabulate', 'jinja2', 'xlrd'],
};

async function main(): Promise<void> {
  const image = process.argv[2]!;
  const reps = Number(process.env.N ?? 3);
  const docker = createDockerClient();
  for (const [name, modules] of Object.entries(SETS)) {
    const times: number[] = [];
    const mems: number[] = [];
    for (let i = 0; i < reps; i++) {
      let readyAt = 0;
      const log: Logger = { debug: () => {}, info: (m) => void (/runner ready/.test(m) && (readyAt = Date.now())), warn: () => {}, error: (m) => process.stderr.write(`${m}\n`) };
      const provider = new DockerSandboxProvider({
        docker, owner: currentOwner('cli', '0.0.0-preload-cost'), log, idleMs: 0, imageSettingHint: 'x',
        spec: () => ({ image, limits: { memoryMb: 1024, cpus: 1, pidsLimit: 256, workAreaMb: 512 }, preloadModules: modules }),
      });
      const t0 = Date.now();
      const sandbox = await provider.acquire(`cost-${name}-${i}`, new AbortController().signal);
      while (!readyAt && Date.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 1500));
      const stats = (await docker.getContainer(sandbox.id).stats({ stream: false })) as { memory_stats: { usage: number; stats?: { cache?: number; inactive_file?: number } } };
      const m = stats.memory_stats;
      mems.push((m.usage - (m.stats?.inactive_file ?? m.stats?.cache ?? 0)) / 2 ** 20);
      times.push(readyAt - t0);
      await sandbox.release?.();
      await provider.dispose();
    }
    const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
    process.stdout.write(`${name.padEnd(7)} ready ${med(times)} ms (${times.join(', ')}); idle memory ${med(mems).toFixed(1)} MiB (${mems.map((x) => x.toFixed(1)).join(', ')})\n`);
  }
}
void main().then(() => process.exit(0), (e) => { process.stderr.write(`${e}\n`); process.exit(1); });
