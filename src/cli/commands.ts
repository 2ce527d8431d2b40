/**
 * The commands of the command line (main.ts loads this module only once a command is to run:
 * the usage and its errors need none of it).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULTS } from '../core/limits';
import { consoleLogger } from '../core/logger';
import { sessionDigest } from '../core/session';
import { ArtifactStore } from '../storage/artifactStore';
import { DockerSandboxProvider, createDockerClient, currentOwner, processIsAlive, removeCliSandboxes, removeOrphanedSandboxes } from '../docker';
import { defaultArtifactsDir } from '../mcp/cacheDir';
import { dataImage } from '../standalone/pipeline';
import { VERSION } from '../version';
import { keepSession } from './keeper';
import { KEEPER_COMMAND, dismissKeeper, keeperAddress, keepersDir } from './keeperLink';
import { UsageError, number, one, type CommandName, type Parsed } from './options';
import { reportFailure } from './report';
import { run, type RunContext } from './run';
import { engineFrom, packagesFrom, sandboxConfigFrom } from './sandboxConfig';
import { standBy } from './standby';
import { MAKER_DEADLINE_MS, SPARE_MAKER_COMMAND, forgetMakerSpec, liveMakers, makerSpec, makersDir, makersEnded, noteMakerEnd } from './spareMaker';

/** Builds the data image (and --packages) ahead of the first run, and says what it did. */
async function prepare(p: Parsed): Promise<number> {
  if (p.positional.length > 0) throw new UsageError('prepare takes no PROGRAM.py');
  const log = consoleLogger(p.flags.has('verbose'));
  const docker = createDockerClient(engineFrom(p));
  const started = Date.now();
  const { base, image } = await dataImage({ packages: packagesFrom(p), log }, docker);
  const took = `${((Date.now() - started) / 1000).toFixed(1)} s`;
  const size = async (id: string) => `${((await docker.getImage(id).inspect()).Size / 1e9).toFixed(2)} GB`;
  process.stdout.write(`data image ${base.tag} (${base.route} route): ${base.built ? `built in ${took}` : 'already built'}, ${await size(base.id)}\n`);
  if (image.tag !== base.tag) process.stdout.write(`packages image ${image.tag} (${image.requirements.join(' ')}): ${image.built ? `built in ${took} with the data image` : 'already built'}\n`);
  return 0;
}

async function mcp(p: Parsed): Promise<number> {
  const notHere = {
    session: 'each connection gets a sandbox of its own',
    spares: 'each connection gets a sandbox of its own',
    'keep-seconds': 'a connection keeps its sandbox while it lasts (--idle-minutes)',
    file: 'the client names the files of each call',
    output: 'the client names the files of each call',
    reset: 'the client asks for it in a call (`reset`)',
  };
  for (const [name, why] of Object.entries(notHere)) {
    if (p.flags.has(name)) throw new UsageError(`--${name} is not an option of mcp: ${why}`);
  }
  if (p.positional.length > 0) throw new UsageError('mcp takes no PROGRAM.py: the client sends the programs');
  const config = sandboxConfigFrom(p);
  // The MCP SDK (and its JSON schema validator) is initialised only for this command.
  const { serveMcp } = await import('../mcp/serve');
  return serveMcp({ ...config, idleMinutes: number(p, 'idle-minutes', DEFAULTS.idleMinutes, 0, 1440) });
}

async function exportCommand(p: Parsed): Promise<number> {
  if (p.positional.length > 0) throw new UsageError('export takes no PROGRAM.py');
  const session = one(p, 'session');
  if (session === undefined) throw new UsageError('export needs --session KEY: the session whose runs become the notebook');
  const store = new ArtifactStore(path.resolve(one(p, 'artifacts') ?? defaultArtifactsDir()));
  const out = one(p, 'out');
  const { exportNotebook } = await import('../standalone/exportNotebook');
  const result = await exportNotebook(store, { session, keptStateOnly: p.flags.has('kept-state-only'), out });
  if (result.written === undefined) process.stdout.write(result.text);
  else process.stderr.write(`wrote ${result.runs} run${result.runs === 1 ? '' : 's'} to ${result.written}\n`);
  return 0;
}

/** Asks the keeper of `session` (on the engine `p` names), or every keeper, to go; how many went. */
async function dismissKeepers(p: Parsed, session: string | undefined): Promise<number> {
  let addresses: string[];
  if (session !== undefined) {
    const address = keeperAddress(session, p);
    addresses = address === undefined ? [] : [address];
  } else {
    const dir = keepersDir();
    addresses = fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => n.endsWith('.sock')).map((n) => path.join(dir, n)) : [];
  }
  let n = 0;
  for (const address of addresses) if (await dismissKeeper(address)) n++;
  return n;
}

async function cleanup(p: Parsed): Promise<number> {
  const session = one(p, 'session');
  const log = consoleLogger(p.flags.has('verbose'));
  const docker = createDockerClient(engineFrom(p));
  // A keeper holds its session's sandbox (and would make it again for its next run): asked to go first.
  const keepers = await dismissKeepers(p, session);
  if (keepers > 0) log.info(`ended ${keepers} session keeper(s)`);
  // A spare being made now would outlive this cleanup.
  if (session === undefined) {
    const makers = liveMakers(makersDir(), processIsAlive);
    if (makers.length > 0) log.info(`waiting for ${makers.length} spare maker(s) to end (process ${makers.join(', ')})`);
    await makersEnded(makersDir(), processIsAlive);
    // A maker that ended meanwhile may wait with its spare as the next new session's keeper
    // (standby.ts), and a keeper asked to go after its session's first run starts the next maker.
    for (let round = 0; round < 3; round++) {
      const waiting = await dismissKeepers(p, undefined);
      if (waiting === 0) break;
      log.info(`ended ${waiting} more keeper(s)`);
      await makersEnded(makersDir(), processIsAlive);
    }
  }
  let n = await removeCliSandboxes(docker, log, session === undefined ? undefined : sessionDigest(`cli:${session}`));
  // A live server's sandbox is in use; only those whose server process is gone are removed.
  if (session === undefined) n += await removeOrphanedSandboxes(docker, currentOwner('mcp', VERSION), log);
  process.stdout.write(`removed ${n} sandbox${n === 1 ? '' : 'es'}\n`);
  return 0;
}

/** The process `run` starts to make the next new session's spare (spareMaker.ts). */
async function makeSpares(p: Parsed): Promise<number> {
  noteMakerEnd();
  const spec = makerSpec();
  if (spec === undefined) throw new UsageError(`unknown command ${SPARE_MAKER_COMMAND}`);
  // Read: not part of the environment a run finds its waiting keeper by (keeperLink.ts), nor passed on.
  forgetMakerSpec();
  const deadline = setTimeout(() => process.exit(1), MAKER_DEADLINE_MS).unref();
  const log = consoleLogger(false);
  const provider = new DockerSandboxProvider({
    docker: createDockerClient(engineFrom(p)),
    owner: currentOwner('cli', VERSION),
    spec: () => spec,
    imageSettingHint: '--image',
    log,
    idleMs: 0,
    adoptExisting: true,
    spareSandboxes: number(p, 'spares', DEFAULTS.spareSandboxes, 0, 8),
  });
  await provider.fillSpares(spec);
  await provider.detachAll();
  clearTimeout(deadline);
  // With a spare made: the keeper of the next new session of these options, waiting (standby.ts).
  return standBy(p, spec, provider, log);
}

const COMMANDS: Record<CommandName, (p: Parsed, ctx: RunContext) => Promise<number>> = {
  run,
  [KEEPER_COMMAND]: keepSession,
  mcp,
  cleanup,
  prepare,
  export: exportCommand,
  [SPARE_MAKER_COMMAND]: makeSpares,
};

/** Runs the command `p` names (main.ts checked it is one), and reports its failure. */
export async function runCommand(p: Parsed, ctx: RunContext = {}): Promise<number> {
  try {
    return await COMMANDS[p.command as CommandName](p, ctx);
  } catch (e) {
    return reportFailure(e);
  }
}
