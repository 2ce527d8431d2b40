import type Dockerode from 'dockerode';
import { ToolError } from '../../core/errors';
import { engineFailure, followProgress, isEngineFailure, statusCode } from '../engine';

export interface PullProgress {
  /** One human line, e.g. "Downloading 3 layers: 41 MB of 120 MB". */
  (message: string, fraction?: number): void;
}

/**
 * Makes sure `image` is present: inspect, else pull with progress and cancellation. An image that
 * cannot be had is a ToolError naming `settingHint`, so the model can tell the user what to change.
 */
export async function ensureImage(
  docker: Dockerode,
  image: string,
  settingHint: string,
  options: { signal?: AbortSignal; onProgress?: PullProgress } = {},
): Promise<void> {
  if (await imagePresent(docker, image)) return;
  options.onProgress?.(`Pulling ${image}`);
  try {
    await pullImage(docker, image, options);
  } catch (e) {
    if (options.signal?.aborted) throw new ToolError('cancelled', 'The image pull was cancelled.', { cause: e });
    if (isEngineFailure(e) && !(e as { message?: string }).message?.includes('registry')) throw engineFailure(e, docker);
    throw new ToolError(
      'image_unavailable',
      `The sandbox image "${image}" is not on this machine and could not be pulled. Ask the user to pull it, or to set ${settingHint} to an image that has python3.`,
      { cause: e },
    );
  }
}

/** True when the engine has `image`; an engine that cannot be reached is a ToolError. */
export async function imagePresent(docker: Dockerode, image: string): Promise<boolean> {
  try {
    await docker.getImage(image).inspect();
    return true;
  } catch (e) {
    if (isEngineFailure(e)) throw engineFailure(e, docker);
    if (statusCode(e) === 404) return false;
    throw e;
  }
}

/**
 * Why a pull failed, decided from the HTTP status of the engine's answer and the error's type,
 * never from its wording (which differs between engine versions and registries):
 * - `no_registry`: the engine answered 5xx before any layer came (it could not reach a registry);
 * - `not_found`: 404, the registry has no such image (or will not say, to strangers);
 * - `denied`: 401 or 403;
 * - `interrupted`: the pull started and an error event ended it (a network that failed midway);
 * - `cancelled`: our signal stopped it.
 */
export type PullFailure = 'no_registry' | 'not_found' | 'denied' | 'interrupted' | 'cancelled';

export function classifyPullFailure(e: unknown, signal?: AbortSignal): PullFailure {
  if (signal?.aborted) return 'cancelled';
  const status = statusCode(e);
  if (status === 404) return 'not_found';
  if (status === 401 || status === 403) return 'denied';
  if (status !== undefined) return 'no_registry';
  return 'interrupted';
}

/** Pulls `image`, reporting layer progress; rejects with the engine's error (see classifyPullFailure). */
export async function pullImage(docker: Dockerode, image: string, options: { signal?: AbortSignal; onProgress?: PullProgress } = {}): Promise<void> {
  const stream = (await docker.pull(image, { abortSignal: options.signal })) as NodeJS.ReadableStream;
  const layers = new Map<string, { current: number; total: number }>();
  await followProgress(docker, stream, {
    signal: options.signal,
    abortMessage: 'pull aborted',
    onEvent: (event) => {
      if (event.error) return; // the wait rejects with it
      const d = event.progressDetail;
      if (event.id && d && typeof d.total === 'number' && d.total > 0) {
        layers.set(event.id, { current: d.current ?? 0, total: d.total });
        let current = 0;
        let total = 0;
        for (const l of layers.values()) {
          current += l.current;
          total += l.total;
        }
        const mb = (n: number) => `${Math.round(n / 1e6)} MB`;
        options.onProgress?.(`Pulling ${image}: ${mb(current)} of ${mb(total)}`, total ? current / total : undefined);
      }
    },
  });
  // A pull that "succeeds" without the image (e.g. an error event swallowed by a proxy) is a failure.
  await docker.getImage(image).inspect();
}
