import * as fs from 'node:fs';
import * as path from 'node:path';
import { runnerConfig, type PreloadWhen } from '../../core/runnerProtocol';

declare const __CODEACT_RUNNER_SOURCE__: string | undefined;
declare const __CODEACT_GUEST_SOURCE__: string | undefined;

const cached = new Map<string, string>();

/**
 * Python the build makes from resources/runner/ (esbuild.mjs). Bundles carry it inline (esbuild
 * defines it); run from the sources (tsx, tests), it is the build's file in dist/, so tests run
 * exactly what ships.
 */
function built(file: 'runner.py' | 'guest.py', inline: string | undefined): string {
  if (typeof inline === 'string') return inline;
  let source = cached.get(file);
  if (source === undefined) {
    const at = path.resolve(__dirname, '../../../dist', file);
    if (!fs.existsSync(at)) {
      throw new Error(`the sandbox runner has not been built (${at} is missing): run \`npm run build\` first, which makes it from resources/runner/`);
    }
    source = fs.readFileSync(at, 'utf8');
    cached.set(file, source);
  }
  return source;
}

/** The runner's source as it ships: its parts joined into one. */
export function runnerSource(): string {
  return built('runner.py', typeof __CODEACT_RUNNER_SOURCE__ === 'string' ? __CODEACT_RUNNER_SOURCE__ : undefined);
}

/** The runner's part 05 alone: what the host's docker exec programs are made of (guest.ts). */
export function guestSource(): string {
  return built('guest.py', typeof __CODEACT_GUEST_SOURCE__ === 'string' ? __CODEACT_GUEST_SOURCE__ : undefined);
}

/**
 * A container's command as a sandbox's match compares it: what was preloaded ahead, on first use
 * (`preload=a;learn=a,b`), was the provider's hint at the time, not a setting. Only modules of the
 * list count as a hint; a command that preloads anything else stays as it is (and matches nothing).
 */
export function commandWithoutAhead(cmd: readonly string[] | undefined): string[] {
  const args = [...(cmd ?? [])];
  const m = /^preload=([^;]*);learn=(.*)$/.exec(args.at(-1) ?? '');
  if (m) {
    const list = m[2]!.split(',');
    if (m[1]!.split(',').every((x) => x === '' || list.includes(x))) args[args.length - 1] = `preload=;learn=${m[2]}`;
  }
  return args;
}

/** PID 1 of a warm sandbox: the runner, which also does the keeper's work (reaping orphans). */
export function runnerCommand(preloadModules: readonly string[], when: PreloadWhen, ahead: readonly string[] = []): string[] {
  return ['python3', '-c', runnerSource(), runnerConfig(preloadModules, when, ahead)];
}
