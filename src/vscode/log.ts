import * as vscode from 'vscode';
import type { Logger } from '../core/logger';
import { OUTPUT_CHANNEL } from './ids';

export function createLog(): { channel: vscode.LogOutputChannel; logger: Logger } {
  const channel = vscode.window.createOutputChannel(OUTPUT_CHANNEL, { log: true });
  const logger: Logger = {
    debug: (m) => channel.debug(m),
    info: (m) => channel.info(m),
    warn: (m) => channel.warn(m),
    error: (m) => channel.error(m),
  };
  return { channel, logger };
}
