import * as fs from 'node:fs';
import * as path from 'node:path';
import { runnerConfig } from '../../core/runnerProtocol';

declare const __CODEACT_RUNNER_SOURCE__: string | undefined;

let cachedSource: string | undefined;

/**
 * The runner's Python source, as it ships: joined by the build from resources/runner/. Bundles
 * carry it inline (esbuild defines __CODEACT_RUNNER_SOURCE__); run from the sources (tsx, tests),
 * it is the build's dist/runner.py, so tests run exactly what ships.
 */
export function runnerSource(): string {
  if (cachedSource !== undefined) return cachedSource;
  if (typeof __CODEACT_RUNNER_SOURCE__ === 'string') return (cachedSource = __CODEACT_RUNNER_SOURCE__);
  const built = path.resolve(__dirname, '../../../dist/runner.py');
  if (!fs.existsSync(built)) {
    throw new Error(`the sandbox runner has not been built (${built} is missing): run \`npm run build\` first, which joins it from resources/runner/`);
  }
  return (cachedSource = fs.readFileSync(built, 'utf8'));
}

/** PID 1 of a warm sandbox: the runner, which also does the keeper's work (reaping orphans). */
export function runnerCommand(preloadModules: readonly string[]): string[] {
  return ['python3', '-c', runnerSource(), runnerConfig(preloadModules)];
}
