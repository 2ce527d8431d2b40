import type Dockerode from 'dockerode';

/** One event of an engine's JSON progress stream (pull, build, load). */
export interface ProgressEvent {
  id?: string;
  status?: string;
  stream?: string;
  error?: string;
  errorDetail?: { message?: string };
  progressDetail?: { current?: number; total?: number };
  aux?: unknown;
}

export interface FollowOptions<E> {
  /** Each event as it arrives. */
  onEvent?: (event: E) => void;
  /** Aborting destroys the stream, which ends the wait with `abortMessage`. */
  signal?: AbortSignal;
  abortMessage?: string;
  /** An event carrying `error` fails the wait with it (a build reports its own errors instead). */
  failOnErrorEvent?: boolean;
}

/**
 * Follows a progress stream the engine answers a pull, build or image load with, to its end. The
 * engine says a failure inside the stream (an event with `error`), not with a status, so the wait
 * rejects with it unless the caller reads the events itself. Resolves with every event.
 */
export function followProgress<E extends ProgressEvent = ProgressEvent>(docker: Dockerode, stream: NodeJS.ReadableStream, options: FollowOptions<E> = {}): Promise<E[]> {
  return new Promise<E[]>((resolve, reject) => {
    const onAbort = () => (stream as unknown as { destroy?: (e?: Error) => void }).destroy?.(new Error(options.abortMessage ?? 'aborted'));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    docker.modem.followProgress(
      stream,
      (err: Error | null, events: E[]) => {
        options.signal?.removeEventListener('abort', onAbort);
        const failed = options.failOnErrorEvent === false ? undefined : events?.find((e) => e.error);
        if (err) reject(err);
        else if (failed) reject(new Error(failed.error));
        else resolve(events ?? []);
      },
      (event: E) => options.onEvent?.(event),
    );
  });
}
