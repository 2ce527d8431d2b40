/**
 * The images this backend leaves on the engine: how they are named and labelled, found again and
 * pruned. Everything here talks to the engine's API, never to the Dev Containers CLI.
 */
import { createHash } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';
import type Dockerode from 'dockerode';
import { describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { archiveOf } from '../files';
import { followProgress, statusCode } from '../engine';
import { LABEL, LABEL_SCHEMA } from '../container';
import { asNamed, listImagesLabelled } from '../images';

/** Repository of every image this backend builds: codeact-devcontainer/<folder digest>:<config hash>. */
export const DEVCONTAINER_REPOSITORY = 'codeact-devcontainer';

export const DEVCONTAINER_LABEL = {
  /** Digest of the host name and workspace folder the image was built for. */
  folder: 'dev.codeact-sandbox.devcontainer.folder',
  /** The configuration hash (also the tag). */
  config: 'dev.codeact-sandbox.devcontainer.config',
} as const;

/** codeact-devcontainer/<12 hex of host + folder>:<16 hex of the configuration hash>. */
export function devcontainerImageTag(workspaceFolder: string, hash: string): string {
  return `${DEVCONTAINER_REPOSITORY}/${folderDigest(workspaceFolder)}:${hash.slice(0, 16)}`;
}

/**
 * The tag the CLI builds under before our labels turn it into the final one: the CLI's own
 * --label does not reach every build path, and the final tag appears only once everything succeeded.
 */
export function stagingImageTag(workspaceFolder: string, hash: string): string {
  return `${DEVCONTAINER_REPOSITORY}/${folderDigest(workspaceFolder)}:build-${hash.slice(0, 16)}`;
}

export function folderDigest(workspaceFolder: string): string {
  return createHash('sha256').update(`${os.hostname()}\0${path.resolve(workspaceFolder)}`).digest('hex').slice(0, 12);
}

/** Removes `tag` (the image stays while another tag names it); an image already gone is fine. */
export async function removeImage(docker: Dockerode, tag: string, log: Logger): Promise<void> {
  try {
    await docker.getImage(tag).remove();
  } catch (e) {
    if (statusCode(e) !== 404) log.warn(`could not remove the image ${tag}: ${describeError(e)}`);
  }
}

/** FROM staging + our labels, through the engine's API (a tar in, nothing on the host's disk). */
export async function labelImage(
  docker: Dockerode,
  staging: string,
  image: { tag: string; hash: string },
  workspaceFolder: string,
  extra: Record<string, string>,
): Promise<void> {
  const labels = {
    [LABEL.managed]: LABEL_SCHEMA,
    [DEVCONTAINER_LABEL.folder]: folderDigest(workspaceFolder),
    [DEVCONTAINER_LABEL.config]: image.hash,
    ...extra,
  };
  const context = archiveOf([{ type: 'file', name: 'Dockerfile', content: Buffer.from(`FROM ${staging}\n`), mode: 0o644 }]);
  const stream = (await docker.buildImage(context, { t: image.tag, labels, rm: true, forcerm: true })) as NodeJS.ReadableStream;
  await followProgress(docker, stream);
  await docker.getImage(image.tag).inspect();
}

/**
 * Removes this backend's images that are no longer wanted: those of `workspaceFolder` (default:
 * all folders of this host) whose tag is not in `keep`. Images still used by a container are left.
 */
export async function pruneDevcontainerImages(docker: Dockerode, log: Logger, options: { workspaceFolder?: string; keep?: string[] } = {}): Promise<number> {
  const label = [`${LABEL.managed}`, ...(options.workspaceFolder ? [`${DEVCONTAINER_LABEL.folder}=${folderDigest(options.workspaceFolder)}`] : [DEVCONTAINER_LABEL.folder])];
  const images = await listImagesLabelled(docker, label);
  const keep = new Set(options.keep ?? []);
  let removed = 0;
  for (const image of images) {
    const tags = (image.RepoTags ?? []).filter((t) => t !== '<none>:<none>').map(asNamed);
    if (tags.some((t) => keep.has(t))) continue;
    try {
      await docker.getImage(image.Id).remove({ noprune: false });
      removed++;
      log.info(`removed the outdated Dev Container image ${tags.join(', ') || image.Id}`);
    } catch (e) {
      // 409: a sandbox still runs from it; the next prune gets it.
      if (statusCode(e) !== 409) log.warn(`could not remove Dev Container image ${tags.join(', ') || image.Id}: ${describeError(e)}`);
    }
  }
  return removed;
}

/**
 * The legacy builder keeps the container of a failed RUN step (docker build --rm removes only
 * those of successful steps, and the Dev Containers CLI does not pass --force-rm). Remove the
 * ones this build left: stopped, created since it started, from a bare image id, not ours.
 */
export async function removeBuildLeftovers(docker: Dockerode, sinceMs: number, log: Logger): Promise<void> {
  try {
    const since = Math.floor(sinceMs / 1000) - 1;
    const containers = await docker.listContainers({ all: true, filters: { status: ['created', 'exited'] } });
    for (const c of containers) {
      if (c.Created < since || !/^sha256:[0-9a-f]{64}$/.test(c.Image) || c.Labels?.[LABEL.managed] !== undefined) continue;
      await docker.getContainer(c.Id).remove({ force: true, v: true });
      log.info(`removed the container of the failed build step ${c.Id.slice(0, 12)}`);
    }
  } catch (e) {
    log.warn(`could not remove the failed build's containers: ${describeError(e)}`);
  }
}

/** The one check for an image on the engine, also this folder's. */
export { imagePresent } from '../images';
