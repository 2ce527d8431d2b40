/**
 * The host's look: its theme and its style variables (VS Code maps them to its own colours, e.g.
 * --color-background-primary to var(--vscode-editor-background)) set on :root, where card.css
 * reads them with its own fallbacks.
 */
import { isObject } from './data';

const VARIABLE = /^--[a-z0-9-]{1,80}$/;
/**
 * A value that could load something is left out, so the frame makes no request whatever the host
 * sends: url() and image() in any spelling (a backslash is a CSS escape, which could spell them).
 */
const LOADS = /url\s*\(|image(-set)?\s*\(|@import|\\/i;

export function applyHostContext(context: Record<string, unknown>): void {
  const root = document.documentElement;
  if (context.theme === 'light' || context.theme === 'dark') {
    root.dataset.theme = context.theme;
    root.style.colorScheme = context.theme;
  }
  const styles = context.styles;
  if (!isObject(styles) || !isObject(styles.variables)) return;
  for (const [name, value] of Object.entries(styles.variables)) {
    if (!VARIABLE.test(name) || typeof value !== 'string' || value.length > 400 || LOADS.test(value)) continue;
    root.style.setProperty(name, value);
  }
}
