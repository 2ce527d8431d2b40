/**
 * A proxy's log, followed line by line until a line settles what the caller waits for: squid
 * listening (proxyContainer.ts), the credential forwarder's CA (credentialProxy.ts).
 */
import { Writable } from 'node:stream';
import type Dockerode from 'dockerode';
import { ENGINE_DEADLINE_MS, withDeadline } from '../engine';

export interface FollowOptions<T> {
  stdout: boolean;
  stderr: boolean;
  /** The whole wait's bound, and what the deadline's error calls it. */
  deadlineMs: number;
  what: string;
  /** A result ends the wait with it; undefined reads on; a throw ends it with that error. */
  onLine(line: string): T | undefined;
  /** The log ended first: the error, given its last lines. */
  atEnd(lastLines: readonly string[]): Error;
}

export async function followProxyLog<T>(docker: Dockerode, container: Dockerode.Container, o: FollowOptions<T>): Promise<T> {
  const stream = (await withDeadline(container.logs({ follow: true, stdout: o.stdout, stderr: o.stderr }), ENGINE_DEADLINE_MS, 'read proxy log')) as NodeJS.ReadableStream & { destroy(): void };
  const last: string[] = [];
  try {
    return await withDeadline(
      new Promise<T>((resolve, reject) => {
        let text = '';
        const sink = new Writable({
          write(chunk: Buffer, _e: unknown, done: () => void) {
            text += chunk.toString('utf8');
            let i: number;
            while ((i = text.indexOf('\n')) >= 0) {
              const line = text.slice(0, i);
              text = text.slice(i + 1);
              last.push(line);
              if (last.length > 20) last.shift();
              try {
                const result = o.onLine(line);
                if (result !== undefined) resolve(result);
              } catch (e) {
                reject(e);
              }
            }
            done();
          },
        });
        docker.modem.demuxStream(stream, sink, sink);
        stream.on('end', () => reject(o.atEnd(last)));
        stream.on('error', reject);
      }),
      o.deadlineMs,
      o.what,
    );
  } finally {
    stream.destroy();
  }
}
