/**
 * The buttons that change which engine the sandbox uses, offered by the view and the notice when
 * the engine looked for does not answer: Podman that answers where Podman's tools look, the SSH
 * host's own engine (over SSH), or the extension moved next to the workspace (WSL, a codespace).
 * Each writes one user setting, as a person would, and checks the engine again.
 */
import type { CommandTable } from './commands';
import { CONFIG_SECTION, COMMAND } from './ids';
import type { SandboxService } from './sandboxService';
import type { Ui } from './ui';
import { sshEngineAddress, type WindowPlace } from './windowPlace';

export const DOCKER_HOST_SETTING = `${CONFIG_SECTION}.dockerHost`;
export const DOCKER_CONTEXT_SETTING = `${CONFIG_SECTION}.dockerContext`;

export function engineCommands(
  sandboxes: Pick<SandboxService, 'podmanAddress' | 'checkEngine'>,
  ui: Ui,
  place: WindowPlace,
  extensionId: string,
): CommandTable<typeof COMMAND.usePodman | typeof COMMAND.useSshEngine | typeof COMMAND.runThere> {
  /** An address in dockerHost, and no context beside it (the two cannot be set together). */
  const useAddress = async (address: string) => {
    await ui.updateUserSetting(DOCKER_CONTEXT_SETTING, () => undefined);
    await ui.updateUserSetting(DOCKER_HOST_SETTING, () => address);
    return sandboxes.checkEngine(true);
  };
  return {
    [COMMAND.usePodman]: async () => {
      const address = await sandboxes.podmanAddress();
      if (!address) {
        ui.showWarning('CodeAct Sandbox: no Podman service answers where Podman keeps its socket. Start it (systemctl --user start podman.socket, podman machine start, or Podman Desktop), then retry.');
        return undefined;
      }
      return useAddress(address);
    },
    [COMMAND.useSshEngine]: async () => {
      // The host comes from the window; without one, the person writes the address in the setting.
      if (!place.sshHost) {
        ui.executeCommand('workbench.action.openSettings', DOCKER_HOST_SETTING);
        return undefined;
      }
      return useAddress(sshEngineAddress(place.sshHost));
    },
    [COMMAND.runThere]: async () => {
      // remote.extensionKind is VS Code's own: the extension runs next to the workspace after a reload.
      await ui.updateUserSetting('remote.extensionKind', (current) => ({ ...(isRecord(current) ? current : {}), [extensionId]: ['workspace'] }));
      const reload = 'Reload Window';
      const choice = await ui.notify(`CodeAct Sandbox will run ${place.kind === 'wsl' ? 'in WSL' : place.kind === 'codespaces' ? 'in the codespace' : 'next to the workspace'} after the window reloads, and use the engine there.`, reload);
      if (choice === reload) ui.executeCommand('workbench.action.reloadWindow');
      return undefined;
    },
  };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
