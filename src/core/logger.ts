/** Where transport and engine detail goes: a log for people, never the model's transcript. */
export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

export function consoleLogger(verbose: boolean): Logger {
  const write = (level: string) => (message: string) => process.stderr.write(`[${level}] ${message}\n`);
  return {
    debug: verbose ? write('debug') : () => {},
    info: verbose ? write('info') : () => {},
    warn: verbose ? write('warn') : () => {},
    error: write('error'),
  };
}
