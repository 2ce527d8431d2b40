#!/usr/bin/env node
/**
 * The execute_code pipeline from a terminal. `run` prints exactly the text the model would
 * receive and exits 0 whenever the tool produced a result (whatever the program's exit code);
 * non-zero only when the tool itself failed (2: bad arguments, 1: no engine, no image, ...).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { ToolError, describeError } from './core/errors';
import { DEFAULTS } from './core/limits';
import { consoleLogger } from './core/logger';
import { sessionDigest, sessionDisplayName } from './core/session';
import { filesInCapsOf, filesOutCapsOf, readSettings } from './core/settings';
import { executeToolCall } from './core/toolCall';
import { ArtifactStore, type RunWriter } from './storage/artifactStore';
import { folderSource } from './storage/workspaceFolder';
import { parseToolInput } from './core/toolInput';
import { removeCliSandboxes } from './docker/cleanup';
import { createDockerClient } from './docker/connection';
import { DockerSandboxProvider } from './docker/dockerSandboxProvider';
import { currentOwner } from './docker/labels';
import { VERSION } from './version';

const USAGE = `usage:
  codeact-sandbox run [options] PROGRAM.py|-      run a program, print what the model would get
  codeact-sandbox cleanup [--session KEY]         remove sandboxes kept by --session

run options:
  --image IMAGE        sandbox image (default ${DEFAULTS.image})
  --session KEY        keep the sandbox under this name and reuse it on the next run
  --timeout SECONDS    stop the program after this long (default ${DEFAULTS.timeoutSeconds})
  --memory MB          memory limit (default ${DEFAULTS.memoryMb})
  --cpus N             CPU limit (default ${DEFAULTS.cpus})
  --pids N             process limit (default ${DEFAULTS.pidsLimit})
  --work-area MB       size of the writable work area (default ${DEFAULTS.workAreaMb})
  --output-budget N    bytes of output shown (default ${DEFAULTS.outputBudgetBytes})
  --workspace DIR      the file store: --file names are looked up in its listing
  --file NAME          share a workspace file into the run's directory (repeatable)
  --output NAME        a file the program writes, to be saved (repeatable; declared mode)
  --outputs MODE       declared (default) or manifest (the program writes outputs.json)
  --artifacts DIR      where runs and saved files are kept (needed to save files)
  --verbose            log engine activity to stderr
`;

class UsageError extends Error {}

interface Parsed {
  command: string;
  flags: Map<string, string[]>;
  positional: string[];
}

const VALUE_FLAGS = new Set(['image', 'session', 'timeout', 'memory', 'cpus', 'pids', 'work-area', 'output-budget', 'workspace', 'file', 'output', 'outputs', 'artifacts']);
const BOOLEAN_FLAGS = new Set(['verbose', 'help']);

function parse(argv: string[]): Parsed {
  const [command = 'help', ...rest] = argv;
  const flags = new Map<string, string[]>();
  const positional: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg.startsWith('--')) {
      const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
      if (BOOLEAN_FLAGS.has(name)) {
        flags.set(name, ['true']);
        continue;
      }
      if (!VALUE_FLAGS.has(name)) throw new UsageError(`unknown option --${name}`);
      const value = inline ?? rest[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
      flags.set(name, [...(flags.get(name) ?? []), value]);
    } else {
      positional.push(arg);
    }
  }
  return { command, flags, positional };
}

function one(p: Parsed, name: string): string | undefined {
  const v = p.flags.get(name);
  if (v && v.length > 1) throw new UsageError(`--${name} given more than once`);
  return v?.[0];
}

function number(p: Parsed, name: string, fallback: number, min: number, max: number): number {
  const raw = one(p, name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max) throw new UsageError(`--${name} must be a number from ${min} to ${max}`);
  return n;
}

async function readProgram(file: string): Promise<string> {
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? e}`);
  }
}

async function run(p: Parsed): Promise<number> {
  if (p.positional.length !== 1) throw new UsageError('run needs exactly one PROGRAM.py (or - for stdin)');
  const log = consoleLogger(p.flags.has('verbose'));
  const image = one(p, 'image') ?? DEFAULTS.image;
  const session = one(p, 'session');
  const timeoutSeconds = number(p, 'timeout', DEFAULTS.timeoutSeconds, 1, 86_400);
  const limits = {
    memoryMb: number(p, 'memory', DEFAULTS.memoryMb, 64, 1_048_576),
    cpus: number(p, 'cpus', DEFAULTS.cpus, 0.1, 1024),
    pidsLimit: number(p, 'pids', DEFAULTS.pidsLimit, 16, 1_000_000),
    workAreaMb: number(p, 'work-area', DEFAULTS.workAreaMb, 16, 1_048_576),
  };
  const outputBudgetBytes = number(p, 'output-budget', DEFAULTS.outputBudgetBytes, 200, 10_000_000);
  const workspace = one(p, 'workspace');
  const outputsMode = one(p, 'outputs') ?? 'declared';
  if (outputsMode !== 'declared' && outputsMode !== 'manifest') throw new UsageError('--outputs must be declared or manifest');
  const artifacts = one(p, 'artifacts');
  const fileNames = p.flags.get('file') ?? [];
  const outputNames = p.flags.get('output') ?? [];
  if (fileNames.length > 0 && workspace === undefined) throw new UsageError('--file needs --workspace DIR');
  if ((outputNames.length > 0 || outputsMode === 'manifest') && artifacts === undefined) {
    throw new UsageError('saving files (--output, --outputs manifest) needs --artifacts DIR');
  }
  if (workspace !== undefined && !fs.statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) {
    throw new UsageError(`--workspace ${workspace} is not a folder`);
  }
  const input = parseToolInput({
    code: await readProgram(p.positional[0]!),
    ...(fileNames.length ? { files: fileNames } : {}),
    ...(outputNames.length ? { outputs: outputNames } : {}),
  });

  const sessionKey = `cli:${session ?? `once-${randomBytes(6).toString('hex')}`}`;
  const provider = new DockerSandboxProvider({
    docker: createDockerClient(),
    owner: currentOwner('cli', VERSION),
    spec: () => ({ image, limits }),
    imageSettingHint: 'a different --image',
    log,
    idleMs: 0,
    adoptExisting: session !== undefined,
  });
  // The caps users get by default in VS Code.
  const defaults = readSettings(() => undefined).settings;
  const store = artifacts === undefined ? undefined : new ArtifactStore(path.resolve(artifacts));
  let writer: RunWriter | undefined;
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const { report, files } = await executeToolCall(
      provider,
      log,
      input,
      {
        sessionKey,
        limits: { timeoutMs: timeoutSeconds * 1000, outputBudgetBytes, maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024 },
        memoryMb: limits.memoryMb,
        filesIn: {
          source: workspace === undefined ? undefined : folderSource(workspace),
          caps: filesInCapsOf(defaults),
        },
        // The same sentence as in VS Code: the CLI prints exactly what the model would read.
        filesOut: { mode: outputsMode, caps: filesOutCapsOf(defaults), savedWhere: 'in the CodeAct Sandbox view' },
        ...(store
          ? {
              record: () => {
                const w = store.beginRun(sessionDigest(sessionKey), sessionDisplayName(sessionKey));
                writer = w;
                return {
                  dir: w.dir,
                  addFile: (name: string, body: NodeJS.ReadableStream, size: number) => w.addFile(name, body as Readable, size),
                  finish: (outcome: Parameters<RunWriter['finish']>[0]) => w.finish(outcome),
                  discard: () => w.discard(),
                };
              },
            }
          : {}),
      },
      abort.signal,
    );
    process.stdout.write(report.text + '\n');
    if (writer && files.length > 0) process.stderr.write(`saved ${files.length} file(s) in ${writer.filesDir}\n`);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (session === undefined) await provider.dispose();
  }
}

async function cleanup(p: Parsed): Promise<number> {
  const session = one(p, 'session');
  const log = consoleLogger(p.flags.has('verbose'));
  const n = await removeCliSandboxes(createDockerClient(), log, session === undefined ? undefined : sessionDigest(`cli:${session}`));
  process.stdout.write(`removed ${n} sandbox${n === 1 ? '' : 'es'}\n`);
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  let parsed: Parsed;
  try {
    parsed = parse(argv);
    if (parsed.flags.has('help') || parsed.command === 'help' || parsed.command === '--help') {
      process.stdout.write(USAGE);
      return 0;
    }
    if (parsed.command === 'run') return await run(parsed);
    if (parsed.command === 'cleanup') return await cleanup(parsed);
    throw new UsageError(`unknown command ${parsed.command}`);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`codeact-sandbox: ${e.message}\n\n${USAGE}`);
      return 2;
    }
    if (e instanceof ToolError) {
      process.stderr.write(`${e.modelMessage}\n`);
      if (process.env.CODEACT_DEBUG) process.stderr.write(`${describeError(e)}\n`);
      return e.code === 'invalid_input' ? 2 : 1;
    }
    process.stderr.write(`codeact-sandbox: ${describeError(e)}\n`);
    return 1;
  }
}

if (require.main === module) {
  // Exit explicitly: hijacked exec sockets and the HTTP agent's keep-alive would otherwise hold
  // the process open for seconds after the answer is printed.
  void main(process.argv.slice(2)).then((code) => {
    process.stdout.write('', () => process.exit(code));
  });
}
