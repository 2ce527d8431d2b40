/**
 * How fast the command line starts, against Node itself in the same run: `node -e 0`, then
 * `node dist/cli.js --help` (the options only: the commands' bundle is not read). Times are
 * medians of interleaved runs; beside them, each process's minor page faults, a count that does
 * not depend on how fast the machine is.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { stat, type Stat } from './stats';

const execFileP = promisify(execFile);

/** Preloaded with --require: says the process's own minor faults as it exits. */
const FAULTS = "process.on('exit', () => require('fs').writeSync(2, `\\nminflt=${process.resourceUsage().minorPageFault}\\n`));\n";

export interface CliStartBench {
  results: { 'cli.nodeStart': Stat; 'cli.help': Stat };
  /** Minor page faults of one process, median. */
  faults: { nodeStart: number; help: number };
}

export async function benchCliStart(n: number): Promise<CliStartBench> {
  const preload = path.join(os.tmpdir(), `codeact-bench-faults-${process.pid}.cjs`);
  fs.writeFileSync(preload, FAULTS);
  const cases = { nodeStart: ['-e', '0'], help: [path.resolve('dist/cli.js'), '--help'] };
  const ms: Record<keyof typeof cases, number[]> = { nodeStart: [], help: [] };
  const faults: Record<keyof typeof cases, number[]> = { nodeStart: [], help: [] };
  try {
    for (let i = 0; i < n + 2; i++) {
      for (const name of Object.keys(cases) as (keyof typeof cases)[]) {
        const t = process.hrtime.bigint();
        const { stderr } = await execFileP(process.execPath, ['--require', preload, ...cases[name]]);
        const took = Number(process.hrtime.bigint() - t) / 1e6;
        if (i < 2) continue; // warm-up: the files are in the page cache from here on
        ms[name].push(took);
        faults[name].push(Number(/minflt=(\d+)/.exec(stderr)?.[1]));
      }
    }
  } finally {
    fs.rmSync(preload, { force: true });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return {
    results: { 'cli.nodeStart': stat(ms.nodeStart), 'cli.help': stat(ms.help) },
    faults: { nodeStart: median(faults.nodeStart), help: median(faults.help) },
  };
}
