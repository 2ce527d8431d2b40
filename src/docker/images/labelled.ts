import type Dockerode from 'dockerode';
import { hasAllLabels } from '../container';

/**
 * The images (tagged, not their layers) that carry every label of `labels` (`key` or `key=value`).
 * The engine is asked for the last, most specific one only: Podman 4's image list answers nothing
 * when given two labels as a list and ignores all but one given as a map, so the rest is checked here.
 */
export async function listImagesLabelled(docker: Dockerode, labels: readonly string[]): Promise<Dockerode.ImageInfo[]> {
  const narrow = labels.at(-1);
  const images = await docker.listImages({ all: false, ...(narrow ? { filters: { label: [narrow] } } : {}) });
  return images.filter((i) => hasAllLabels(i.Labels, labels));
}
