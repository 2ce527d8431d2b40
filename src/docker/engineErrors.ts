import { ToolError } from '../core/errors';

const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOENT',
  'EACCES',
  'EPERM',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'DEADLINE',
]);

/** True when the error says the engine could not be talked to at all (as opposed to refusing a request). */
export function isUnreachable(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && UNREACHABLE_CODES.has(code);
}

export function statusCode(e: unknown): number | undefined {
  const s = (e as { statusCode?: unknown } | null)?.statusCode;
  return typeof s === 'number' ? s : undefined;
}

export function engineUnreachable(cause: unknown): ToolError {
  return new ToolError(
    'engine_unreachable',
    'Docker is not reachable, so the program was not run. Ask the user to start Docker (Docker Desktop or the docker service) or to check the Docker connection settings, then try again.',
    { cause },
  );
}

/** Rejects with code DEADLINE when `promise` takes longer than `ms` (a hung engine must not hang the chat). */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new Error(`${what} did not answer within ${ms} ms`) as Error & { code: string };
      err.code = 'DEADLINE';
      reject(err);
    }, ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
