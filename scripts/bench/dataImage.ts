/**
 * The default data image in the bench: how long finding (or, with BENCH_BUILD=1, building from
 * scratch without cached layers) takes through the extension's own code path, how big it is, and a
 * warm pandas call on it through the pipeline. Only the routes this machine can run are timed;
 * the others are named as not measured.
 */
import type Dockerode from 'dockerode';
import { executeCode } from '../../src/core/executeCode';
import { DEFAULTS, type SandboxLimits } from '../../src/core/limits';
import type { Logger } from '../../src/core/logger';
import { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { ROUTE_NAMES, ensureDataImage } from '../../src/docker/images';
import { currentOwner } from '../../src/docker/container/labels';
import { stat, type Stat } from './stats';

export interface DataImageBench {
  tag: string;
  route: string;
  /** Found by tag (or built, with BENCH_BUILD=1), in ms. */
  ensureMs: number;
  builtFromScratch: boolean;
  sizeMb: number;
  warmPandas: Stat;
  notMeasured: string[];
}

const PANDAS = 'import pandas as pd\nprint(pd.DataFrame({"a": range(1000), "b": range(1000)}).sum())';

export async function benchDataImage(docker: Dockerode, log: Logger, n: number, version: string, limits: SandboxLimits): Promise<DataImageBench> {
  const force = process.env.BENCH_BUILD === '1';
  const t0 = performance.now();
  const image = await ensureDataImage({ docker, log, ...(force ? { force } : {}) });
  const ensureMs = performance.now() - t0;
  const info = await docker.getImage(image.tag).inspect();
  const provider = new DockerSandboxProvider({
    docker,
    owner: currentOwner('cli', version),
    spec: () => ({ image: image.tag, limits, preloadModules: [...DEFAULTS.preloadModules] }),
    imageSettingHint: 'the data image',
    log,
    idleMs: 0,
  });
  const key = `bench:data:${process.pid}`;
  const runLimits = { timeoutMs: 120_000, outputBudgetBytes: DEFAULTS.outputBudgetBytes, maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024 };
  const call = () => executeCode(provider, log, { code: PANDAS, sessionKey: key }, runLimits);
  try {
    await call();
    const sandbox = provider.active.get(key)!;
    if (!(await sandbox.warmedUp(120_000))) throw new Error('the warm runner did not come up in the data image');
    for (let i = 0; i < 2; i++) await call();
    const ms: number[] = [];
    for (let i = 0; i < n; i++) {
      const s = performance.now();
      const r = await call();
      ms.push(performance.now() - s);
      if (!/^stdout:\na\s+499500\nb\s+499500\ndtype: int64$/.test(r.text)) throw new Error(`data image pandas: unexpected result ${JSON.stringify(r.text)}`);
    }
    return {
      tag: image.tag,
      route: image.route,
      ensureMs,
      builtFromScratch: force,
      sizeMb: info.Size / 1e6,
      warmPandas: stat(ms),
      notMeasured: ROUTE_NAMES.filter((r) => r !== image.route).map((r) => `${r} route: its base image cannot be had here, or it was not needed`),
    };
  } finally {
    await provider.dispose();
  }
}
