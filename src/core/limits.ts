/** Defaults shared by the settings schema, the CLI and the tests: one place, one value. */
export const DEFAULTS = {
  image: 'python:3.12-slim',
  timeoutSeconds: 120,
  memoryMb: 1024,
  cpus: 1,
  pidsLimit: 256,
  workAreaMb: 512,
  /** Copilot moves tool results larger than about 8 KB out of the prompt; stay under that. */
  outputBudgetBytes: 7800,
  /** A program that prints more than this in total is stopped: nobody reads it, and it costs the engine. */
  maxOutputMb: 64,
  idleMinutes: 15,
  confirmBeforeRun: false,
} as const;

export interface SandboxLimits {
  memoryMb: number;
  cpus: number;
  pidsLimit: number;
  workAreaMb: number;
}

export interface RunLimits {
  timeoutMs: number;
  outputBudgetBytes: number;
  maxOutputBytes: number;
}

/** Longest program source accepted, in characters; far above anything a model writes in one call. */
export const MAX_CODE_CHARS = 200_000;
