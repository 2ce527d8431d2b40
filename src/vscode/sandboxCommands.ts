import { describeError, isToolError } from '../core/errors';
import type { Logger } from '../core/logger';
import { ImageBuildError } from '../docker';
import type { CommandTable } from './commands';
import { COMMAND } from './ids';
import type { SandboxService } from './sandboxService';
import { ACTION, type Ui } from './ui';

/** The commands that act on the window's sandboxes and their image. */
export function sandboxCommands(
  sandboxes: SandboxService,
  ui: Ui,
  logger: Logger,
): CommandTable<typeof COMMAND.removeSandboxes | typeof COMMAND.prepareImage | typeof COMMAND.rebuildDevcontainer> {
  return {
    [COMMAND.removeSandboxes]: async () => {
      const n = await sandboxes.removeAll().catch((e: unknown) => {
        logger.error(describeError(e));
        return 0;
      });
      ui.showInfo(`CodeAct Sandbox: removed ${n} sandbox${n === 1 ? '' : 'es'}.`);
    },
    [COMMAND.prepareImage]: async () => {
      const started = Date.now();
      try {
        const prepared = await sandboxes.prepareImage();
        if ('notUsed' in prepared) {
          ui.showInfo(`CodeAct Sandbox: ${prepared.notUsed}, so the sandbox does not use the data image; nothing was built.`);
          return prepared;
        }
        const took = ((Date.now() - started) / 1000).toFixed(1);
        ui.showInfo(
          prepared.built.length
            ? `CodeAct Sandbox: the sandbox image ${prepared.tag} is ready (built in ${took} s).`
            : `CodeAct Sandbox: the sandbox image ${prepared.tag} was already built.`,
        );
        return prepared;
      } catch (e) {
        logger.error(`preparing the sandbox image failed: ${describeError(e)}`);
        // A build failure was shown by the build's own notification already.
        if (!(e instanceof ImageBuildError)) ui.showError(`CodeAct Sandbox: ${isToolError(e) ? e.modelMessage : describeError(e)}`, ACTION.showLog, ACTION.prepare);
        return undefined;
      }
    },
    [COMMAND.rebuildDevcontainer]: async () => {
      try {
        await sandboxes.rebuildDevcontainer();
        ui.showInfo('CodeAct Sandbox: the Dev Container image was rebuilt; the next call uses it.');
      } catch (e) {
        logger.error(`rebuild failed: ${describeError(e)}`);
        ui.showError(`CodeAct Sandbox: ${isToolError(e) ? e.modelMessage : describeError(e)}`, ACTION.showLog, ACTION.rebuild);
      }
    },
  };
}
