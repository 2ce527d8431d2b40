import { describeError, isToolError } from '../core/errors';
import type { Logger } from '../core/logger';
import { ImageBuildError } from '../docker';
import { forPerson } from './personText';
import type { CommandTable } from './commands';
import { COMMAND } from './ids';
import type { SandboxService } from './sandboxService';
import { ACTION, type Ui, type UiAction } from './ui';

/** The commands that act on the window's sandboxes and their image. */
export function sandboxCommands(
  sandboxes: SandboxService,
  ui: Ui,
  logger: Logger,
): CommandTable<typeof COMMAND.removeSandboxes | typeof COMMAND.prepareImage | typeof COMMAND.rebuildDevcontainer> {
  /**
   * What the person is told when their command failed: the engine's own notice (with its buttons)
   * when the engine is the trouble, else the model's sentence in the person's words (personText.ts).
   */
  const tellFailure = (e: unknown, retry: UiAction) => {
    const engine = sandboxes.engineState.state;
    if (isToolError(e) && (e.code === 'engine_unreachable' || e.code === 'engine_busy') && engine !== undefined && engine !== 'ok') {
      sandboxes.engineState.tell(engine);
      return;
    }
    ui.showError(`CodeAct Sandbox: ${isToolError(e) ? forPerson(e.modelMessage) : describeError(e)}`, ACTION.showLog, retry);
  };
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
        if (!(e instanceof ImageBuildError)) tellFailure(e, ACTION.prepare);
        return undefined;
      }
    },
    [COMMAND.rebuildDevcontainer]: async () => {
      try {
        await sandboxes.rebuildDevcontainer();
        ui.showInfo('CodeAct Sandbox: the Dev Container image was rebuilt; the next call uses it.');
      } catch (e) {
        logger.error(`rebuild failed: ${describeError(e)}`);
        tellFailure(e, ACTION.rebuild);
      }
    },
  };
}
