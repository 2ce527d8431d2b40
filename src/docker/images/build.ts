/**
 * One image build through the engine's API (dockerode buildImage, a tar context made with
 * tar-stream), nothing on the host's disk: usable with a remote engine as with the local one.
 */
import type Dockerode from 'dockerode';
import { extract } from 'tar-stream';
import type { Readable } from 'node:stream';
import type { Logger } from '../../core/logger';
import type { InstalledDistribution } from '../../core/missingModule';
import { LABEL, LABEL_SCHEMA } from '../container';
import { followProgress } from '../engine';
import { BuildOutput, type BuildEvent, type BuildProgressListener } from './buildProgress';
import { contextArchive, type BuildContext } from './dockerfile';
import { IMAGE_LABEL, parseDistributions } from './imageLabels';
import { LISTING_OUTPUT } from './listDistributions';

export interface RunBuildOptions {
  docker: Dockerode;
  /** The Dockerfile and its files, or a context already made as a tar stream (files that are not text). */
  context: BuildContext | Readable;
  tag: string;
  labels: Record<string, string>;
  /** The network of the build's RUN steps (the engine's default when unset); the sandbox never has one. */
  networkMode?: string;
  /** Build every step again instead of reusing cached layers. */
  noCache?: boolean;
  /** Aborting it ends the request, and the engine then stops the build. */
  signal: AbortSignal;
  log: Logger;
  /** What each log line starts with ("data image build (debian)"). */
  logPrefix: string;
  onProgress: BuildProgressListener;
}

/** The build ended without an image: the engine's error (or the transport's) and the last lines. */
export class BuildFailed extends Error {
  constructor(
    message: string,
    readonly tail: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'BuildFailed';
  }
}

/** Builds `context` as `tag`; resolves with the image id, rejects with BuildFailed. */
export async function runBuild(o: RunBuildOptions): Promise<{ imageId: string; tail: readonly string[] }> {
  const output = new BuildOutput(o.onProgress, (line) => o.log.info(`${o.logPrefix}: ${line}`));
  let stream: NodeJS.ReadableStream;
  try {
    stream = (await o.docker.buildImage(('pipe' in o.context ? o.context : contextArchive(o.context)) as unknown as NodeJS.ReadableStream, {
      t: o.tag,
      labels: o.labels,
      // Intermediate containers go, even those of a failed or cancelled step.
      rm: true,
      forcerm: true,
      // The base was pulled (or found) before; a build never pulls behind our back.
      pull: false,
      ...(o.networkMode ? { networkmode: o.networkMode } : {}),
      ...(o.noCache ? { nocache: true } : {}),
      abortSignal: o.signal,
    })) as NodeJS.ReadableStream;
  } catch (e) {
    throw new BuildFailed(`the engine refused the build: ${(e as Error)?.message ?? e}`, output.tail, { cause: e });
  }
  try {
    await followProgress<BuildEvent>(o.docker, stream, { signal: o.signal, abortMessage: 'build aborted', failOnErrorEvent: false, onEvent: (event) => output.event(event) });
  } catch (e) {
    throw new BuildFailed(`the build stream failed: ${(e as Error).message}`, output.tail, { cause: e });
  } finally {
    output.end();
  }
  if (output.error) throw new BuildFailed(output.error, output.tail);
  if (o.signal.aborted) throw new BuildFailed('the build was aborted', output.tail);
  const info = await o.docker.getImage(o.tag).inspect();
  return { imageId: info.Id, tail: output.tail };
}

/**
 * The distributions a finished build listed (the file its last step wrote), read from a
 * container that is created and never started: nothing runs, the file comes out as a tar.
 */
export async function readListing(docker: Dockerode, image: string): Promise<InstalledDistribution[]> {
  const container = await docker.createContainer({
    Image: image,
    Cmd: ['true'],
    NetworkDisabled: true,
    Labels: { [LABEL.managed]: LABEL_SCHEMA, [IMAGE_LABEL.kind]: 'listing' },
  });
  try {
    const archive = (await container.getArchive({ path: LISTING_OUTPUT })) as unknown as Readable;
    const text = await firstFileOf(archive);
    const parsed = parseDistributions(text);
    if (!parsed) throw new Error(`${LISTING_OUTPUT} in ${image} is not a list of distributions`);
    return parsed;
  } finally {
    await container.remove({ force: true, v: true }).catch(() => {});
  }
}

async function firstFileOf(archive: Readable): Promise<string> {
  const ex = extract();
  let text: string | undefined;
  const done = new Promise<void>((resolve, reject) => {
    ex.on('entry', (header, body, next) => {
      const chunks: Buffer[] = [];
      body.on('data', (c: unknown) => {
        if (text === undefined && header.type === 'file') chunks.push(c as Buffer);
      });
      body.on('end', () => {
        if (text === undefined && header.type === 'file') text = Buffer.concat(chunks).toString('utf8');
        next();
      });
      body.on('error', reject);
    });
    ex.on('finish', resolve);
    ex.on('error', reject);
  });
  archive.pipe(ex);
  await done;
  if (text === undefined) throw new Error('the archive held no file');
  return text;
}

/**
 * `FROM staging` plus labels, tagged `tag`: labels hold what only the finished build knows (its
 * distributions), and the final tag appears only once everything succeeded.
 */
export async function labelImage(docker: Dockerode, staging: string, tag: string, labels: Record<string, string>, signal: AbortSignal, log: Logger): Promise<string> {
  const { imageId } = await runBuild({
    docker,
    context: { dockerfile: `FROM ${staging}\n`, files: {} },
    tag,
    labels,
    signal,
    // Its steps only repeat the labels: detail for debugging, not the build log.
    log: { ...log, info: log.debug },
    logPrefix: `labelling ${tag}`,
    onProgress: () => {},
  });
  return imageId;
}
