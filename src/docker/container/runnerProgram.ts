import * as fs from 'node:fs';
import * as path from 'node:path';
import { runnerConfig } from '../../core/runnerProtocol';

declare const __CODEACT_RUNNER_SOURCE__: string | undefined;

let cachedSource: string | undefined;

/**
 * The runner's Python source (resources/runner.py). Bundles carry it inline (esbuild defines
 * __CODEACT_RUNNER_SOURCE__); from the sources (tsx, tests) it is read next to the repository.
 */
export function runnerSource(): string {
  if (cachedSource !== undefined) return cachedSource;
  if (typeof __CODEACT_RUNNER_SOURCE__ === 'string') return (cachedSource = __CODEACT_RUNNER_SOURCE__);
  const candidates = [path.resolve(__dirname, '../../../resources/runner.py'), path.resolve(__dirname, '../resources/runner.py')];
  for (const file of candidates) {
    if (fs.existsSync(file)) return (cachedSource = fs.readFileSync(file, 'utf8'));
  }
  throw new Error(`the sandbox runner (resources/runner.py) was not found next to ${__dirname}`);
}

/** PID 1 of a warm sandbox: the runner, which also does the keeper's work (reaping orphans). */
export function runnerCommand(preloadModules: readonly string[]): string[] {
  return ['python3', '-c', runnerSource(), runnerConfig(preloadModules)];
}
