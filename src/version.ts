// Replaced at bundle time by esbuild's `define`; the fallback serves ts-node style test runs.
declare const __CODEACT_VERSION__: string | undefined;
export const VERSION: string = typeof __CODEACT_VERSION__ === 'string' ? __CODEACT_VERSION__ : '0.0.0-dev';
