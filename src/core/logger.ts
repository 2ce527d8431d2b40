/** Where transport and engine detail goes: a log for people, never the model's transcript. */
export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** Lines for a terminal: errors always, the rest with `verbose`; to standard error unless `to` says where. */
export function consoleLogger(verbose: boolean, to: (text: string) => void = (text) => void process.stderr.write(text)): Logger {
  const write = (level: string) => (message: string) => to(`[${level}] ${message}\n`);
  return {
    debug: verbose ? write('debug') : () => {},
    info: verbose ? write('info') : () => {},
    warn: verbose ? write('warn') : () => {},
    error: write('error'),
  };
}
