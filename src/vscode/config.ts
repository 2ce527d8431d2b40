import * as vscode from 'vscode';
import type { Logger } from '../core/logger';
import { readSettings, type Settings } from '../core/settings';
import { CONFIG_SECTION } from './ids';

/**
 * Settings are read at every call, so a change applies to the next call. Invalid values are
 * reported once per distinct problem (a warning and the log) and replaced by defaults.
 */
export class SettingsReader {
  private reported = new Set<string>();

  constructor(private readonly log: Logger) {}

  /** Every distinct problem reported so far (for the status of the extension and its tests). */
  get problems(): string[] {
    return [...this.reported];
  }

  read(): Settings {
    const config = vscode.workspace.getConfiguration(CONFIG_SECTION);
    const { settings, problems } = readSettings((key) => config.get(key), CONFIG_SECTION);
    for (const problem of problems) {
      if (this.reported.has(problem)) continue;
      this.reported.add(problem);
      this.log.warn(problem);
      void vscode.window.showWarningMessage(`CodeAct Sandbox: ${problem}`);
    }
    return settings;
  }
}
