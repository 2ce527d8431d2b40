/**
 * Whether execute_code reaches the model through the run card (the extension's own MCP server)
 * or as the plain language-model tool: never both. Pure, from what the window knows.
 */
export interface CardPathFacts {
  /** This VS Code can take an extension's MCP server (lm.registerMcpServerDefinitionProvider). */
  api: boolean;
  /** It renders MCP Apps (`chat.mcp.apps.enabled`, on by default). */
  appsEnabled: boolean;
  /** The person's `codeactSandbox.runCard`. */
  runCard: boolean;
  /**
   * `codeactSandbox.confirmBeforeRun`: each run is asked with the project's own question, which
   * shows the program exactly; VS Code's question before an MCP tool shows its input but can be
   * auto-approved, so the person who asked for the project's question keeps the plain tool.
   */
  confirmBeforeRun: boolean;
}

export function cardPathWorks(f: CardPathFacts): boolean {
  return f.api && f.appsEnabled && f.runCard && !f.confirmBeforeRun;
}
