import { Writable } from 'node:stream';
import type Dockerode from 'dockerode';
import { ENGINE_DEADLINE_MS, withDeadline } from '../engine';
import { GUEST_PYTHON_FLAGS, SANDBOX_USER, oomCountSource } from './guest';

/** Starts one of our fixed sources (never the model's) as the sandbox user; returns its output stream. */
export async function startGuest(container: Dockerode.Container, source: string, deadlineMs: number): Promise<NodeJS.ReadableStream> {
  const giveUp = Date.now() + deadlineMs;
  const exec = await withDeadline(
    container.exec({ Cmd: ['python3', ...GUEST_PYTHON_FLAGS, '-c', source], User: SANDBOX_USER, AttachStdout: true, AttachStderr: true }),
    Math.max(1, giveUp - Date.now()),
    'create exec',
  );
  return (await withDeadline(exec.start({ hijack: true, stdin: false }), Math.max(1, giveUp - Date.now()), 'start exec')) as NodeJS.ReadableStream;
}

/** Resolves when a started guest's output ends, which it does when its process exits; never rejects. */
export function guestEnded(output: NodeJS.ReadableStream): Promise<void> {
  return new Promise<void>((resolve) => {
    output.on('end', resolve);
    output.on('close', resolve);
    output.on('error', () => resolve());
    output.resume();
  });
}

/** The container cgroup's count of OOM kills since it started; undefined when it cannot be read. */
export async function oomKillCount(docker: Dockerode, container: Dockerode.Container): Promise<number | undefined> {
  const stream = await startGuest(container, oomCountSource(), ENGINE_DEADLINE_MS);
  const out: Buffer[] = [];
  const ended = new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
  });
  docker.modem.demuxStream(stream, collector(out), collector([]));
  await withDeadline(ended, ENGINE_DEADLINE_MS, 'read the OOM-kill count');
  const text = Buffer.concat(out).toString('latin1').trim();
  return /^\d+$/.test(text) ? Number(text) : undefined;
}

function collector(into: Buffer[]): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      into.push(chunk);
      done();
    },
  });
}
