// The layering is enforced here, not remembered: imports point adapter -> docker/storage -> core.
import tseslint from 'typescript-eslint';

const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'node_modules/**', 'test/host/runner/**', 'test/host/fixtures/**', '**/*.mjs', '**/*.js'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/core/**/*.ts'],
    rules: restrict([
      { group: ['vscode'], message: 'core never imports vscode' },
      { group: ['dockerode', 'docker-modem'], message: 'core never imports the Docker client' },
      { group: ['../docker/*', '../vscode/*', '../storage/*', '../cli'], message: 'core imports nothing above it' },
    ]),
  },
  {
    files: ['src/docker/**/*.ts'],
    rules: restrict([
      { group: ['vscode'], message: 'the Docker layer never imports vscode' },
      { group: ['../vscode/*', '../storage/*', '../cli', '../../storage/*', '../../cli'], message: 'the Docker layer imports only core' },
    ]),
  },
  {
    files: ['src/storage/**/*.ts'],
    rules: restrict([
      { group: ['vscode'], message: 'storage never imports vscode' },
      { group: ['dockerode', '../docker/*', '../vscode/*', '../cli'], message: 'storage imports only core' },
    ]),
  },
  {
    files: ['src/cli.ts'],
    rules: restrict([{ group: ['vscode', './vscode/*'], message: 'the CLI runs without VS Code' }]),
  },
);
