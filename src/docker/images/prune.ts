/**
 * Removing our images that are no longer wanted, found by label (never by guessing from names):
 * data images of another recipe, packages images built on a data image that is not the current
 * one, leftovers of a build that crashed (their staging tag). An image a sandbox still runs from
 * is left for the next prune.
 */
import type Dockerode from 'dockerode';
import { describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { LABEL } from '../container';
import { statusCode } from '../engine';
import { IMAGE_LABEL, type ImageKind } from './imageLabels';
import { tagsIn } from './repoTags';
import { listImagesLabelled } from './labelled';

export interface PruneOptions {
  /** Only tags of this repository are touched. */
  repository: string;
  kind: ImageKind;
  /** Tags to keep. */
  keep: readonly string[];
  /** packages images: also keep those built on one of these base image ids (at most `maxOthers` of them, newest first). */
  keepBases?: readonly string[];
  maxOthers?: number;
}

/** Removes the unwanted tags; returns how many were removed. */
export async function pruneImages(docker: Dockerode, log: Logger, o: PruneOptions): Promise<number> {
  const label = [LABEL.managed, `${IMAGE_LABEL.kind}=${o.kind}`];
  const images = await listImagesLabelled(docker, label);
  const keep = new Set(o.keep);
  const bases = new Set(o.keepBases ?? []);
  let others = 0;
  let removed = 0;
  for (const image of [...images].sort((a, b) => b.Created - a.Created)) {
    const tags = tagsIn(image.RepoTags, o.repository);
    if (!tags.length || tags.some((t) => keep.has(t))) continue;
    const staging = tags.every((t) => t.startsWith(`${o.repository}:build-`));
    if (!staging && bases.has(image.Labels?.[IMAGE_LABEL.base] ?? '') && others++ < (o.maxOthers ?? 0)) continue;
    for (const tag of tags) {
      try {
        await docker.getImage(tag).remove();
        removed++;
        log.info(`removed the outdated sandbox image ${tag}`);
      } catch (e) {
        // 409: a sandbox still runs from it; 404: someone else was faster.
        const s = statusCode(e);
        if (s !== 409 && s !== 404) log.warn(`could not remove the sandbox image ${tag}: ${describeError(e)}`);
      }
    }
  }
  return removed;
}
