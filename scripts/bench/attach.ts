/**
 * The floor of any call on the runner channel: one byte there and back on the engine's attach
 * stream, the only way into a sandbox that has no network and no host mounts. A container runs
 * `cat` as a sandbox's user (read-only root, no capabilities, no network; the limits do not touch
 * the stream), which writes back each byte it reads: nothing of ours is on the path, so what a
 * call costs above this is ours, and what this costs is the engine's.
 */
import type Dockerode from 'dockerode';
import { Writable, type Duplex } from 'node:stream';
import { SANDBOX_GID, SANDBOX_UID } from '../../src/docker/container/guest';
import { stat, type Stat } from './stats';

/** `runtime`: undefined for the engine's default. `gapMs`: idle time before each byte, as between calls. */
export async function attachRoundTrip(docker: Dockerode, image: string, runtime: string | undefined, n: number, gapMs: number): Promise<Stat> {
  const container = await docker.createContainer({
    Image: image,
    Entrypoint: ['cat'],
    Cmd: [],
    User: `${SANDBOX_UID}:${SANDBOX_GID}`,
    OpenStdin: true,
    StdinOnce: false,
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    NetworkDisabled: true,
    HostConfig: { ...(runtime ? { Runtime: runtime } : {}), NetworkMode: 'none', ReadonlyRootfs: true, CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'], AutoRemove: true, LogConfig: { Type: 'none', Config: {} } },
  });
  try {
    const stream = (await container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as Duplex;
    let echoed: (() => void) | undefined;
    const sink = (deliver: () => void) =>
      new Writable({
        write(_chunk, _enc, done) {
          deliver();
          done();
        },
      });
    docker.modem.demuxStream(stream, sink(() => echoed?.()), sink(() => {}));
    await container.start();
    const ms: number[] = [];
    for (let i = 0; i < n + 5; i++) {
      await new Promise((r) => setTimeout(r, gapMs));
      const t = performance.now();
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no echo on the attach stream under ${runtime ?? 'the default runtime'}`)), 10_000);
        echoed = () => {
          clearTimeout(timer);
          resolve();
        };
        stream.write('x');
      });
      if (i >= 5) ms.push(performance.now() - t);
    }
    stream.destroy();
    return stat(ms);
  } finally {
    await container.kill().catch(() => {});
  }
}
