#!/usr/bin/env node
/**
 * The execute_code pipeline from a terminal. `run` prints exactly the text the model would
 * receive and exits 0 whenever the tool produced a result (whatever the program's exit code);
 * non-zero only when the tool itself failed (2: bad arguments, 1: no engine, no image, ...).
 */
import { enableCompileCache } from './compileCache';
import type { LockAhead } from '../docker/ahead';
import { ENGINE_OPTIONS, USAGE, UsageError, cliSessionKey, isCommandName, one, parse, type Parsed } from './options';
import { runByKeeper } from './keeperLink';
import { readProgram } from './programFile';
import { reportFailure } from './report';

export async function main(argv: string[]): Promise<number> {
  let parsed: Parsed;
  try {
    parsed = parse(argv);
    if (parsed.flags.has('help') || parsed.command === 'help' || parsed.command === '--help') {
      process.stdout.write(USAGE);
      return 0;
    }
    for (const name of ['out', 'kept-state-only']) {
      if (parsed.command !== 'export' && parsed.flags.has(name)) throw new UsageError(`--${name} is an option of export`);
    }
    if (!isCommandName(parsed.command)) throw new UsageError(`unknown command ${parsed.command}`);
  } catch (e) {
    return reportFailure(e);
  }
  // A run on a kept session goes to the session's keeper (started now if none listens): then
  // nothing else is loaded (keeperLink.ts).
  let code: string | undefined;
  if (parsed.command === 'run') {
    const kept = await runByKeeper(parsed, readProgram);
    if (kept.exitCode !== undefined) return kept.exitCode;
    code = kept.code;
  }
  // Loaded only now: the engine client, the MCP SDK and the rest are not read for `--help` or a
  // usage error, so those answer as fast as Node starts (esbuild.mjs makes it a file of its own).
  enableCompileCache();
  const ahead = await lockAhead(parsed);
  const { runCommand } = await import('./commands');
  return runCommand(parsed, { ...(ahead ? { ahead } : {}), ...(code !== undefined ? { code } : {}) });
}

/**
 * A run on a kept session asks for the session's lock before the commands load: the lock's exec
 * is the slowest step of a warm run, and the engine makes it while this process loads the rest
 * (src/docker/container/lockAhead.ts). Only when the environment names the engine plainly; the
 * run checks it resolves the same engine before it uses the lock.
 */
async function lockAhead(p: Parsed): Promise<LockAhead | undefined> {
  try {
    const session = p.command === 'run' ? one(p, 'session') : undefined;
    if (session === undefined || ENGINE_OPTIONS.some((name) => p.flags.has(name))) return undefined;
    const { lockCliSessionAhead } = await import('../docker/ahead');
    return lockCliSessionAhead(cliSessionKey(session));
  } catch {
    return undefined; // a repeated --session and the like: the command says so
  }
}

if (require.main === module) {
  // Exit explicitly: hijacked exec sockets and the HTTP agent's keep-alive would otherwise hold
  // the process open for seconds after the answer is printed.
  void main(process.argv.slice(2)).then((code) => {
    process.stdout.write('', () => process.exit(code));
  });
}
