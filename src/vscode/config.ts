import type { Logger } from '../core/logger';
import { readSettings, type SettingKey, type Settings } from '../core/settings';
import { isExplicit, settingValue } from '../core/trust';
import { CONFIG_SECTION } from './ids';
import { ACTION, type Ui, type WorkspaceEnv } from './ui';

/**
 * Settings are read at every call, so a change applies to the next call. In an untrusted
 * workspace, restricted settings (engine, image, backend, deny-list, ...) take only the user's
 * own value. Invalid values are reported once per distinct problem (a warning and the log) and
 * replaced by defaults.
 */
export class SettingsReader {
  private reported = new Set<string>();

  constructor(
    private readonly log: Logger,
    private readonly workspace: Pick<WorkspaceEnv, 'configuration' | 'isTrusted'>,
    private readonly ui: Pick<Ui, 'showWarning'>,
  ) {}

  /** Every distinct problem reported so far (for the status of the extension and its tests). */
  get problems(): string[] {
    return [...this.reported];
  }

  read(): Settings {
    const config = this.workspace.configuration();
    const trusted = this.workspace.isTrusted();
    const { settings, problems } = readSettings((key) => settingValue(key, config.inspect(key), trusted), CONFIG_SECTION);
    const personal = config.inspect('credentials');
    if (personal?.workspaceValue !== undefined || personal?.workspaceFolderValue !== undefined) {
      problems.unshift(
        `${CONFIG_SECTION}.credentials is set in this workspace's settings, which is ignored: only your user settings bind your secrets (a repository's settings could otherwise send your key to its own host).`,
      );
    }
    for (const problem of problems) {
      if (this.reported.has(problem)) continue;
      this.reported.add(problem);
      this.log.warn(problem);
      // The problem names its setting first ("codeactSandbox.memoryMb = ..."): the button opens it.
      const key = /^(codeactSandbox\.[\w.]+)/.exec(problem)?.[1];
      this.ui.showWarning(`CodeAct Sandbox: ${problem}`, ...(key ? [ACTION.openSetting(key)] : []));
    }
    return settings;
  }

  /** Whether the user (or a trusted workspace) set this setting, as opposed to its default. */
  isExplicit(key: SettingKey): boolean {
    return isExplicit(key, this.workspace.configuration().inspect(key), this.workspace.isTrusted());
  }
}
