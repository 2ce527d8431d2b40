import * as fs from 'node:fs';
import * as path from 'node:path';
import { ToolError } from '../../core/errors';

/**
 * Where the Dev Containers CLI is. The extension's bundle carries a copy of the CLI's own
 * prebuilt single-file bundle next to itself (dist/devcontainers-cli/, put there by esbuild.mjs);
 * from source (tests, tsx) the npm package is used.
 */
export function locateDevcontainerCli(): string {
  const candidates = [
    process.env.CODEACT_DEVCONTAINER_CLI,
    path.join(__dirname, 'devcontainers-cli', 'dist', 'spec-node', 'devContainersSpecCLI.js'),
  ];
  for (const c of candidates) if (c && fs.existsSync(c)) return c;
  try {
    const pkgFile = require.resolve('@devcontainers/cli/package.json');
    const pkg = JSON.parse(fs.readFileSync(pkgFile, 'utf8')) as { bin?: string | Record<string, string> };
    const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin?.devcontainer;
    if (bin) {
      const script = path.join(path.dirname(pkgFile), bin);
      if (fs.existsSync(script)) return script;
    }
  } catch {
    // not installed
  }
  throw new ToolError(
    'build_failed',
    'The Dev Container image could not be built because the Dev Containers CLI is missing from this installation of CodeAct Sandbox. Ask the user to reinstall the extension, or to switch the sandbox backend to docker.',
  );
}
