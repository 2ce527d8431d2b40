/** Every identifier VS Code sees, in one place. package.json must agree (checked by a unit test). */
export const TOOL_NAME = 'execute_code';
export const CONFIG_SECTION = 'codeactSandbox';
export const OUTPUT_CHANNEL = 'CodeAct Sandbox';
export const VIEW_CONTAINER = 'codeactSandbox';
/** The extension's own MCP server (the chat's run card), as VS Code knows its provider. */
export const MCP_PROVIDER = 'codeactSandbox.runCard';
/** True while the run card is the way execute_code reaches the model: the plain tool's `when` clause hides it then. */
export const RUN_CARD_CONTEXT = 'codeactSandbox.runCardActive';
export const VIEW = {
  artifacts: 'codeactSandbox.artifacts',
} as const;
export const COMMAND = {
  showLog: 'codeactSandbox.showLog',
  removeSandboxes: 'codeactSandbox.removeSandboxes',
  refresh: 'codeactSandbox.refresh',
  openFile: 'codeactSandbox.openFile',
  showRun: 'codeactSandbox.showRun',
  openNotebook: 'codeactSandbox.openNotebook',
  exportNotebook: 'codeactSandbox.exportNotebook',
  saveFile: 'codeactSandbox.saveFile',
  revealFile: 'codeactSandbox.revealFile',
  copyPath: 'codeactSandbox.copyPath',
  deleteRun: 'codeactSandbox.deleteRun',
  deleteSession: 'codeactSandbox.deleteSession',
  clearAll: 'codeactSandbox.clearAll',
  prepareImage: 'codeactSandbox.prepareImage',
  rebuildDevcontainer: 'codeactSandbox.rebuildDevcontainer',
  checkEngine: 'codeactSandbox.checkEngine',
  usePodman: 'codeactSandbox.usePodman',
  useSshEngine: 'codeactSandbox.useSshEngine',
  runThere: 'codeactSandbox.runThere',
  openTroubleshooting: 'codeactSandbox.openTroubleshooting',
  goBackToRun: 'codeactSandbox.goBackToRun',
  startChatFromRun: 'codeactSandbox.startChatFromRun',
  addCredential: 'codeactSandbox.addCredential',
  listCredentials: 'codeactSandbox.listCredentials',
  removeCredential: 'codeactSandbox.removeCredential',
} as const;
