/**
 * The labels on the images we build: they say what an image is (ours, which recipe, which
 * route, built on which base) and what it has (the distributions its build listed), so the host
 * learns both from an inspect, and old images are found for pruning by label, not by name.
 */
import type Dockerode from 'dockerode';
import { z } from 'zod';
import type { InstalledDistribution } from '../../core/missingModule';
import { LABEL, LABEL_SCHEMA } from '../container';
import { ROUTE_NAMES, type RouteName } from './recipe';

export const IMAGE_LABEL = {
  /** "data" (the default image), "packages" (the default image plus the user's packages) or "proxy". */
  kind: 'dev.codeact-sandbox.image.kind',
  /** data: the recipe hash; packages: the hash of (base image id, requirements). */
  hash: 'dev.codeact-sandbox.image.hash',
  /** The route the data image (or the base of a packages image) was built by. */
  route: 'dev.codeact-sandbox.image.route',
  /** packages: the id of the data image it was built on. */
  base: 'dev.codeact-sandbox.image.base',
  /** packages: the user's requirements, a JSON array. */
  requirements: 'dev.codeact-sandbox.image.requirements',
  /** What the build found installed: a JSON array of {name, version, modules, requested}. */
  distributions: 'dev.codeact-sandbox.image.distributions',
} as const;

/** proxy: the network proxy's image (proxyImage.ts), labelled with kind and hash only. */
export type ImageKind = 'data' | 'packages' | 'proxy' | 'chat';

export function imageLabels(kind: ImageKind, hash: string, route: RouteName, extra: Record<string, string> = {}): Record<string, string> {
  return { [LABEL.managed]: LABEL_SCHEMA, [IMAGE_LABEL.kind]: kind, [IMAGE_LABEL.hash]: hash, [IMAGE_LABEL.route]: route, ...extra };
}

const distributionsSchema = z.array(
  z.object({
    name: z.string().max(200),
    version: z.string().max(100),
    modules: z.array(z.string().max(200)).max(500).catch([]),
    requested: z.boolean().catch(false),
  }),
);

/** The distributions label, parsed; undefined when absent or unreadable (an image we did not label). */
export function parseDistributions(text: string | undefined): InstalledDistribution[] | undefined {
  if (!text) return undefined;
  try {
    const parsed = distributionsSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export interface OurImage {
  id: string;
  kind: ImageKind;
  hash: string;
  route: RouteName;
  /** packages images: the base image id and the requirements. */
  base?: string;
  requirements?: string[];
  distributions?: InstalledDistribution[];
}

/** What the labels of an inspected image say, or undefined when it is not one of ours. */
export function ourImage(info: Pick<Dockerode.ImageInspectInfo, 'Id' | 'Config'>): OurImage | undefined {
  const labels = info.Config?.Labels ?? {};
  const kind = labels[IMAGE_LABEL.kind];
  const route = labels[IMAGE_LABEL.route] as RouteName | undefined;
  if (labels[LABEL.managed] === undefined || (kind !== 'data' && kind !== 'packages') || !route || !ROUTE_NAMES.includes(route)) return undefined;
  let requirements: string[] | undefined;
  try {
    const r = z.array(z.string()).safeParse(JSON.parse(labels[IMAGE_LABEL.requirements] ?? 'null'));
    if (r.success) requirements = r.data;
  } catch {
    // not a packages image
  }
  return {
    id: info.Id,
    kind,
    hash: labels[IMAGE_LABEL.hash] ?? '',
    route,
    ...(labels[IMAGE_LABEL.base] ? { base: labels[IMAGE_LABEL.base] } : {}),
    ...(requirements ? { requirements } : {}),
    ...(labels[IMAGE_LABEL.distributions] ? { distributions: parseDistributions(labels[IMAGE_LABEL.distributions]) } : {}),
  };
}

/**
 * The distributions an image has, from its labels: what the ModuleNotFoundError hint names.
 * Undefined for an image we did not build (or one that is gone).
 */
export async function imageDistributions(docker: Dockerode, image: string): Promise<InstalledDistribution[] | undefined> {
  try {
    return ourImage(await docker.getImage(image).inspect())?.distributions;
  } catch {
    return undefined;
  }
}
