/**
 * Resume in the bench: a chat whose 100 MB DataFrame state was kept loses its sandbox, and its
 * next call rebuilds the state by replaying the kept run, against a new chat's first call that
 * makes the same state (the cold start the model would otherwise redo) and its question. Also
 * what the replay keeps on disk per MB of state (the run records). `npm run bench` runs it with
 * the rest; on its own: `tsx scripts/bench/resume.ts` (BENCH_IMAGE, BENCH_N as for the bench).
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type Dockerode from 'dockerode';
import { DEFAULTS, type SandboxLimits } from '../../src/core/limits';
import { silentLogger } from '../../src/core/logger';
import { SessionStates } from '../../src/core/state';
import { executeToolCall } from '../../src/core/toolCall';
import { createDockerClient } from '../../src/docker/engine/connection';
import { ArtifactStore } from '../../src/storage/artifactStore';
import { RunRecording } from '../../src/storage/runRecorder';
import { stateBenchProvider } from './session';
import { STANDALONE, printRatios, printTable, runStandalone, stat, type Stat } from './stats';

const execFileP = promisify(execFile);
const RUN_LIMITS = { timeoutMs: 120_000, outputBudgetBytes: DEFAULTS.outputBudgetBytes, maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024 };
const KEPT = 'State: kept for the next call.';
/** 100 MB of float64 in ten columns, from a seeded generator (the replay makes the same). */
const LOAD_DF = 'import numpy as np\nimport pandas as pd\ndf = pd.DataFrame(np.random.default_rng(1).random((1_310_720, 10)))\nprint(round(df.memory_usage().sum() / 2**20))';
const ASK_DF = 'print(round(float(df[0].mean()), 2))';
const STATE_MB = 100;

export interface ResumeBench {
  results: Record<string, Stat>;
  /** Bytes the store keeps for a replay (the kept run's record) per MB of state. */
  recordBytesPerStateMb: number;
  ratios: Record<string, number>;
}

export async function benchResume(dockerClient: Dockerode, image: string, n: number, version: string, limits: SandboxLimits): Promise<ResumeBench> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'codeact-bench-resume-'));
  const provider = stateBenchProvider(dockerClient, image, version, limits);
  const store = new ArtifactStore(root);
  const states = new SessionStates();
  const call = async (key: string, code: string): Promise<string> => {
    const recording = new RunRecording(store, key);
    const { report } = await executeToolCall(provider, silentLogger, { code }, {
      sessionKey: key,
      limits: RUN_LIMITS,
      memoryMb: limits.memoryMb,
      filesIn: { source: undefined, caps: { denyGlobs: [], maxFiles: 0, maxFileBytes: 0, maxTotalBytes: 0 } },
      filesOut: { mode: 'declared', caps: { maxFiles: 0, maxFileBytes: 0, maxTotalBytes: 0 }, savedWhere: 'nowhere' },
      record: recording.record,
      states,
      stateRuns: recording.stateRuns,
    });
    return report.text;
  };
  const expect = (text: string, want: RegExp) => {
    if (!want.test(text)) throw new Error(`unexpected result ${JSON.stringify(text.slice(0, 400))}`);
  };
  const timed = async (fn: () => Promise<void>) => {
    const t = process.hrtime.bigint();
    await fn();
    return Number(process.hrtime.bigint() - t) / 1e6;
  };
  const removeSandbox = async (key: string) => {
    await execFileP('docker', ['rm', '-f', provider.active.get(key)!.id]);
  };
  const firstCall: number[] = [];
  const coldState: number[] = [];
  const resumed: number[] = [];
  try {
    // One round each: a new chat's first call (the 100 MB state), the cold start of that state
    // and its question, and the same question after the sandbox was removed (replay + question).
    for (let i = 0; i < n; i++) {
      const chat = `bench:resume:${process.pid}:${i}`;
      firstCall.push(await timed(async () => expect(await call(chat, LOAD_DF), new RegExp(`^stdout:\\n100\\n\\n${KEPT}$`))));
      const cold = `bench:resume-cold:${process.pid}:${i}`;
      coldState.push(await timed(async () => expect(await call(cold, `${LOAD_DF}\n${ASK_DF}`), new RegExp(`^stdout:\\n100\\n0.5\\n\\n${KEPT}$`))));
      await provider.release(cold);
      await removeSandbox(chat);
      resumed.push(await timed(async () => expect(await call(chat, ASK_DF), /^stdout:\n0\.5\n\nState: restored before this call by re-running this chat's 1 kept run in order/)));
      await provider.release(chat);
    }
    const sessions = await store.listSessions();
    const digest = sessions[sessions.length - 1]!.sessionDigest;
    const [loaded] = (await store.listRuns(digest)).reverse();
    const recordBytes = fs.statSync(path.join(root, digest, loaded!.runId, 'run.json')).size;
    const results = {
      'resume.new chat, first call (100 MB state)': stat(firstCall),
      'resume.new chat, same state and question (cold start)': stat(coldState),
      'resume.removed sandbox, replay and question': stat(resumed),
    };
    const r = (k: keyof typeof results) => results[k].median;
    return {
      results,
      recordBytesPerStateMb: recordBytes / STATE_MB,
      ratios: {
        "resume by replay of a 100 MB state / a new chat's first call making it (target <= 2)":
          r('resume.removed sandbox, replay and question') / r('resume.new chat, first call (100 MB state)'),
        'resume by replay / cold start of the same state and question (no target)':
          r('resume.removed sandbox, replay and question') / r('resume.new chat, same state and question (cold start)'),
      },
    };
  } finally {
    await provider.dispose();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/** Prints what benchResume measured (the bench's table format). */
export function printResume(b: ResumeBench): void {
  printTable('resume after the sandbox was removed', Object.entries(b.results));
  console.log(`kept for a replay: ${b.recordBytesPerStateMb.toFixed(1)} bytes of run record per MB of state (the program, not the state)\n`);
  printRatios(b.ratios);
}

if (require.main === module) {
  runStandalone(benchResume(createDockerClient(), STANDALONE.image, STANDALONE.n(5), STANDALONE.version, STANDALONE.limits), printResume);
}
