// The command line both runners take (run.mjs: code-server in Chromium; electron.mjs:
// @vscode/test-electron), parsed once: the same options mean the same thing in both.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

/**
 * Parses `argv` into the runner's options; throws with every problem at once. `--help` prints
 * `usage` and exits. `repoRoot` places the default artifacts folder.
 */
export function parseRunnerCli(argv, { usage, repoRoot }) {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      ext: { type: 'string', multiple: true },
      tests: { type: 'string' },
      workspace: { type: 'string' },
      timeout: { type: 'string', default: '300' },
      settings: { type: 'string' },
      'seed-storage': { type: 'string' },
      artifacts: { type: 'string' },
      keep: { type: 'boolean', default: false },
      untrusted: { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) { console.log(usage); process.exit(0); }
  const problems = [];
  const existing = (label, p) => {
    if (!p) { problems.push(`${label} is required`); return undefined; }
    const abs = path.resolve(p);
    if (!fs.existsSync(abs)) problems.push(`${label} does not exist: ${abs}`);
    return abs;
  };
  const exts = [...new Set((values.ext || []).map((p) => existing('--ext', p)))];
  if (exts.length === 0) problems.push('--ext is required');
  const opts = {
    exts,
    tests: existing('--tests', values.tests),
    workspace: existing('--workspace', values.workspace),
    timeoutS: Number(values.timeout),
    settings: values.settings && existing('--settings', values.settings),
    seedStorage: values['seed-storage'] && existing('--seed-storage', values['seed-storage']),
    artifacts: path.resolve(values.artifacts || path.join(repoRoot, 'test-results', 'host')),
    keep: values.keep,
    untrusted: values.untrusted,
    verbose: values.verbose || process.env.CODEACT_HOST_VERBOSE === '1',
  };
  if (!(opts.timeoutS > 0)) problems.push(`--timeout must be a positive number of seconds, got ${values.timeout}`);
  if (problems.length) throw new Error(problems.join('\n'));
  return opts;
}
