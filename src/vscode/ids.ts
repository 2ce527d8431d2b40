/** Every identifier VS Code sees, in one place. package.json must agree (checked by a unit test). */
export const TOOL_NAME = 'execute_code';
export const CONFIG_SECTION = 'codeactSandbox';
export const OUTPUT_CHANNEL = 'CodeAct Sandbox';
export const COMMAND = {
  showLog: 'codeactSandbox.showLog',
  removeSandboxes: 'codeactSandbox.removeSandboxes',
} as const;
