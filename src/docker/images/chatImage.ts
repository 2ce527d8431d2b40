/**
 * A chat's prepared image: the Python packages its programs installed, kept as an image its next
 * sandboxes start from, so they are not installed again.
 *
 * pip, run by a program as the sandbox user, installs into the user site in the work area. The
 * work area is a tmpfs, which a commit of the container would not capture, so the packages pip
 * installed there (chatSite.ts says which files those are) are read out as a tar by a reader of
 * ours running as the sandbox user (siteReader.ts), between two calls, and copied into an image
 * built FROM the image the sandbox runs. The build has no network and runs nothing of the chat:
 * the files are copied, not installed. Every Python started in the sandbox but the runner (PID 1) puts them on its path
 * where the user site stood, before the image's own packages, and pip finds them installed.
 */
import type { Readable } from 'node:stream';
import type Dockerode from 'dockerode';
import { pack } from 'tar-stream';
import type { Logger } from '../../core/logger';
import { HOME_DIR, LABEL, LABEL_SCHEMA, WORK_ROOT, hasAllLabels } from '../container';
import { statusCode } from '../engine';
import { runBuild } from './build';
import { IMAGE_LABEL } from './imageLabels';
import { tagsIn } from './repoTags';
import { listImagesLabelled } from './labelled';
import { distributionOf, repackSite } from './chatSite';
import { LinkedSite, readSite } from './siteReader';

export const CHAT_REPOSITORY = 'codeact-sandbox/chat-packages';
/** Where the chat's packages are in its image. */
export const CHAT_SITE = '/opt/codeact-sandbox/chat-site';
const MAX_NAMED_DISTRIBUTIONS = 200;
/**
 * A chat image made from a sandbox made from the chat's image is built on it: its layers stack.
 * Past this many builds the chat's image is not built again (its later packages are installed
 * again by a re-run), far below the 127 layers an overlay file system can mount.
 */
export const MAX_CHAT_GENERATIONS = 8;

export const CHAT_LABEL = {
  /** The chat's session digest. */
  session: 'dev.codeact-sandbox.chat.session',
  /** The id of the image at the bottom (the configured one): only a sandbox of that image uses it. */
  base: 'dev.codeact-sandbox.chat.base',
  /** The container and the user site's stat it was read from: the same read is not built twice. */
  source: 'dev.codeact-sandbox.chat.source',
  /** The distributions in it ("name version"), a JSON array. */
  distributions: 'dev.codeact-sandbox.chat.distributions',
  /** How many chat builds it stacks on the configured image (1: built on it). */
  generation: 'dev.codeact-sandbox.chat.generation',
  /** The records its chat is kept in (ChatRecords.store): only a process of those records removes it for lack of its chat. */
  store: 'dev.codeact-sandbox.chat.store',
  /**
   * What its packages take (chatSite.ts's diskBytes, with the builds it stacks on): what the
   * limits count. An image without it was made before only installed packages were kept, and is
   * not used.
   */
  bytes: 'dev.codeact-sandbox.chat.bytes',
} as const;

export interface ChatImage {
  tag: string;
  id: string;
  session: string;
  base: string;
  source: string;
  distributions: string[];
  /** ChatRecords.store of the process that made it ('' when none was given). */
  store: string;
  generation: number;
  /** CHAT_LABEL.bytes; undefined for an image made before it was written. */
  bytes: number | undefined;
  /** When the engine made it (ms since the epoch). */
  created: number;
}

/** The user site of a sandbox's Python ("3.11.2"), or undefined when the version is not one. */
export function userSitePackages(python: string | undefined): string | undefined {
  const m = /^(\d{1,2})\.(\d{1,3})(?:\.\d+)?$/.exec(python ?? '');
  return m ? `${HOME_DIR}/.local/lib/python${m[1]}.${m[2]}/site-packages` : undefined;
}

export function chatImageTag(sessionDigest: string): string {
  return `${CHAT_REPOSITORY}:${sessionDigest.slice(0, 16)}`;
}

/**
 * Run, in a fresh interpreter's start, by the `.pth` line below (with globals of its own): adds the
 * chat's folder as a site directory (its own .pth files count) and moves it before the image's
 * site directories, where the user site's packages stood when they were installed.
 */
export const CHAT_SITE_CODE = [
  'import site, sys',
  'n = len(sys.path)',
  `site.addsitedir(${JSON.stringify(CHAT_SITE)})`,
  'added = sys.path[n:]',
  'del sys.path[n:]',
  'dirs = site.getsitepackages()',
  'k = next((i for i, p in enumerate(sys.path) if p in dirs), len(sys.path))',
  'sys.path[k:k] = added',
  '',
].join('\n');
export const CHAT_SITE_CODE_FILE = '/opt/codeact-sandbox/chat-site.py';

/**
 * The `.pth` line in the image's site directory: every Python started in the sandbox sees the
 * chat's packages (a program's `python3 -m pip` finds them installed), except PID 1, the runner,
 * which never reads what a chat wrote (the container has no init of the engine's: spec.ts), and
 * root, which never runs in a sandbox but does in a later build of the chat's image, where an
 * engine set to add its init makes Python not PID 1. A program the runner forks gets them from
 * the runner itself (_late_sites, resources/runner/70_child.py).
 */
export const CHAT_PTH_LINE = `import os; os.getpid() != 1 and os.getuid() != 0 and exec(open(${JSON.stringify(CHAT_SITE_CODE_FILE)}).read(), {})`;

/** FROM the sandbox's image: the user site's files under CHAT_SITE, and the two files above. */
export function chatDockerfile(from: string, distributions: readonly string[], bytes: number): string {
  const writePth = ['import os, site', 'd = site.getsitepackages()[0]', 'os.makedirs(d, exist_ok=True)', `open(os.path.join(d, "codeact-chat-site.pth"), "w").write(${JSON.stringify(`${CHAT_PTH_LINE}\n`)})`].join('\n');
  return [
    '# CodeAct Sandbox: the packages a chat installed. Generated.',
    `FROM ${from}`,
    `COPY site/ ${CHAT_SITE}/`,
    `COPY chat-site.py ${CHAT_SITE_CODE_FILE}`,
    // The sandbox runs as its own user whatever the image says; root here writes the .pth only,
    // with no site directory read (-S): built FROM an earlier chat image, they hold the chat's files.
    'USER 0:0',
    `RUN ${JSON.stringify(['python3', '-I', '-S', '-c', writePth])}`,
    // Names and versions as distributionOf reads them: no quote or backslash can be in them.
    `LABEL ${CHAT_LABEL.distributions}=${JSON.stringify(JSON.stringify(distributions))}`,
    `LABEL ${CHAT_LABEL.bytes}="${Math.floor(bytes)}"`,
    '',
  ].join('\n');
}

interface PathStat {
  mtime?: string;
  size?: number;
  mode?: number;
  linkTarget?: string;
}

/** A path's stat as the engine reads it: the last part is not followed. Undefined when there is none. */
async function pathStat(container: Dockerode.Container, at: string): Promise<PathStat | undefined> {
  try {
    const res = (await container.infoArchive({ path: at })) as { headers: Record<string, string | undefined>; resume?: () => void };
    res.resume?.();
    const raw = res.headers['x-docker-container-path-stat'];
    return raw ? (JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as PathStat) : undefined;
  } catch (e) {
    if (statusCode(e) === 404) return undefined;
    throw e;
  }
}

/** The work area's own path: a mount, which the sandbox cannot replace. */
const WORK_AREA_PARTS = WORK_ROOT.split('/').length;

/** Go's os.ModeSymlink, as the engine reports a mode. */
const MODE_SYMLINK = 0x8000000;

/**
 * The user site's stat ("mtime size"), undefined when there is none: the capture reads the site
 * only when it changed. A folder of its path below the work area that is a link is refused here
 * already (the engine's stat follows links, as root); the read itself never follows one
 * (siteReader.ts), whatever is swapped after this look.
 */
export async function siteStamp(container: Dockerode.Container, sitePath: string): Promise<string | undefined> {
  const parts = sitePath.split('/');
  let stat: PathStat | undefined;
  for (let n = WORK_AREA_PARTS + 1; n <= parts.length; n++) {
    const at = parts.slice(0, n).join('/');
    stat = await pathStat(container, at);
    if (!stat) return undefined;
    // Docker names a link's target only; Podman names every path's resolved self, a link's differs.
    if (((stat.mode ?? 0) & MODE_SYMLINK) !== 0 || (stat.linkTarget && stat.linkTarget !== at)) throw new LinkedSite(at);
  }
  return stat ? `${stat.mtime ?? ''} ${stat.size ?? ''}` : undefined;
}

/** The user site has no package pip installed (only files of other kinds, which are not kept). */
export class NothingInstalled extends Error {
  constructor() {
    super('no package pip installed is in the user site');
    this.name = 'NothingInstalled';
  }
}

/** Runs a task while no program of the sandbox runs (DockerSandbox.between). */
export type BetweenCalls = <T>(task: () => Promise<T>) => Promise<T>;

export interface BuildChatImageOptions {
  docker: Dockerode;
  log: Logger;
  container: Dockerode.Container;
  sitePath: string;
  /**
   * When the reader may run in the sandbox: between two calls. A process of ours still running
   * when a session call ends makes that call's state unkeepable, and the call's own cleanup
   * would kill it.
   */
  between: BetweenCalls;
  /** The image id the sandbox runs (the configured image, or the chat's image before this one). */
  from: string;
  /** What the chat's image had before (when `from` is one), kept in the new one's label. */
  earlier: readonly string[];
  /** The bytes of the chat's image before (when `from` is one): the new one's label counts them too. */
  earlierBytes: number;
  base: string;
  session: string;
  source: string;
  store: string;
  /** CHAT_LABEL.generation of the new image. */
  generation: number;
  /** What the user site may add (the chat's limit less earlierBytes). */
  maxBytes: number;
  /** The sandbox's work area, which every file of its user site really sits in. */
  workAreaBytes: number;
  signal: AbortSignal;
}

/** Builds the chat's image from the packages installed in its sandbox's user site. */
export async function buildChatImage(o: BuildChatImageOptions): Promise<ChatImage> {
  const tag = chatImageTag(o.session);
  const labels = {
    [LABEL.managed]: LABEL_SCHEMA,
    [IMAGE_LABEL.kind]: 'chat',
    [CHAT_LABEL.session]: o.session,
    [CHAT_LABEL.base]: o.base,
    [CHAT_LABEL.source]: o.source,
    [CHAT_LABEL.generation]: String(o.generation),
    ...(o.store ? { [CHAT_LABEL.store]: o.store } : {}),
  };
  // Only the read waits for the sandbox to be between calls; the build goes on after it.
  const { read, built } = await o.between(async () => {
    const site = await readSite(o.container, o.sitePath, o.signal);
    const context = pack();
    context.on('error', () => {}); // destroyed when the read or the build failed: each says so itself
    // The Dockerfile goes last: the engine reads the whole context before it builds, and only the
    // end of the read knows the distributions and bytes its labels name. Nothing is held in memory.
    const read = (async () => {
      const kept = await repackSite(site.archive, context, { maxBytes: o.maxBytes, workAreaBytes: o.workAreaBytes });
      await site.ended;
      if (kept.distributions.length === 0) throw new NothingInstalled();
      const distributions = [...new Set([...o.earlier, ...kept.distributions])].sort();
      const bytes = o.earlierBytes + kept.bytes;
      const dockerfile = Buffer.from(chatDockerfile(o.from, distributions.slice(0, MAX_NAMED_DISTRIBUTIONS), bytes), 'utf8');
      context.entry({ name: 'chat-site.py', mode: 0o644, uid: 0, gid: 0, mtime: new Date(0) }, CHAT_SITE_CODE);
      context.entry({ name: 'Dockerfile', mode: 0o644, uid: 0, gid: 0, mtime: new Date(0), size: dockerfile.length }, dockerfile);
      context.finalize();
      return { distributions, bytes };
    })();
    read.catch((e: unknown) => {
      site.archive.destroy();
      context.destroy(e instanceof Error ? e : new Error(String(e)));
    });
    const built = runBuild({ docker: o.docker, context: context as unknown as Readable, tag, labels, networkMode: 'none', signal: o.signal, log: o.log, logPrefix: 'chat image build', onProgress: () => {} });
    // A build the engine refused reads no more of the context: the reader is stopped too.
    built.catch(() => {
      site.archive.destroy();
      context.destroy();
    });
    // The next call waits until the reader has ended, not for the build.
    await Promise.allSettled([read, site.ended]);
    return { read, built };
  });
  // The read's failure says why (a link, too large, nothing installed); the build's follows from it.
  const [r, b] = await Promise.allSettled([read, built]);
  if (r.status === 'rejected') throw r.reason;
  if (b.status === 'rejected') throw b.reason;
  const { distributions, bytes } = r.value;
  return { tag, id: b.value.imageId, session: o.session, base: o.base, source: o.source, distributions, store: o.store, generation: o.generation, bytes, created: Date.now() };
}

const CHAT_FILTER = [LABEL.managed, `${IMAGE_LABEL.kind}=chat`];

/** The configured image `imageId` was made on: itself, or for a chat image the one its label names. */
export async function configuredBase(docker: Dockerode, imageId: string): Promise<string> {
  const labels = (await docker.getImage(imageId).inspect()).Config?.Labels ?? {};
  return (hasAllLabels(labels, CHAT_FILTER) && labels[CHAT_LABEL.base]) || imageId;
}

/** The chat images on the engine, by session digest (found by label, read from the labels). */
export async function listChatImages(docker: Dockerode): Promise<Map<string, ChatImage>> {
  const images = await listImagesLabelled(docker, CHAT_FILTER);
  const out = new Map<string, ChatImage>();
  for (const i of images) {
    const labels = i.Labels ?? {};
    const session = labels[CHAT_LABEL.session];
    const tag = tagsIn(i.RepoTags, CHAT_REPOSITORY)[0];
    if (!session || !tag || tag !== chatImageTag(session)) continue;
    const bytes = labels[CHAT_LABEL.bytes];
    out.set(session, {
      tag,
      id: i.Id,
      session,
      base: labels[CHAT_LABEL.base] ?? '',
      source: labels[CHAT_LABEL.source] ?? '',
      distributions: namesOf(labels[CHAT_LABEL.distributions]),
      store: labels[CHAT_LABEL.store] ?? '',
      generation: Number(labels[CHAT_LABEL.generation] ?? '1') || 1,
      bytes: bytes !== undefined && /^\d{1,15}$/.test(bytes) ? Number(bytes) : undefined,
      created: (i.Created || 0) * 1000,
    });
  }
  return out;
}

function namesOf(text: string | undefined): string[] {
  try {
    const parsed: unknown = JSON.parse(text ?? '[]');
    return Array.isArray(parsed) ? parsed.filter((x): x is string => typeof x === 'string' && distributionOf(`${x.replace(' ', '-')}.dist-info`) !== undefined) : [];
  } catch {
    return [];
  }
}

/** The tag a deleted chat's image keeps while a sandbox still runs from it: no lookup of a chat finds it. */
const DROPPED = 'dropped-';

/**
 * Removes a chat's image (the ones it was built on go with it when nothing else uses them). One a
 * sandbox still runs from is renamed now, so no new sandbox is made from it, and removed by
 * removeDropped once no container uses it. Never forced: Podman's forced removal of an image also
 * removes the containers made from it, and the chat's sandbox may still be running a call.
 */
export async function removeChatImage(docker: Dockerode, log: Logger, session: string): Promise<void> {
  const tag = chatImageTag(session);
  try {
    await docker.getImage(tag).remove();
    log.info(`removed the chat's prepared image ${tag}`);
    return;
  } catch (e) {
    if (statusCode(e) === 404) return;
    if (statusCode(e) !== 409) {
      log.info(`could not remove ${tag}: ${(e as Error).message}`);
      return;
    }
  }
  try {
    // With a second name, removing the first removes that name only, on every engine.
    await docker.getImage(tag).tag({ repo: CHAT_REPOSITORY, tag: `${DROPPED}${session.slice(0, 16)}` });
    await docker.getImage(tag).remove();
    log.info(`the chat's prepared image ${tag} is in use by its sandbox; it goes when that sandbox does`);
  } catch (e) {
    if (statusCode(e) !== 404) log.info(`could not remove ${tag}: ${(e as Error).message}`);
  }
}

/** Removes the chat images no chat uses by name (its chat deleted while a sandbox ran from it, or read again since) once no container uses them. */
export async function removeDropped(docker: Dockerode): Promise<void> {
  const images = await listImagesLabelled(docker, CHAT_FILTER);
  for (const i of images) {
    const tags = tagsIn(i.RepoTags, CHAT_REPOSITORY);
    if (tags.some((t) => !t.startsWith(`${CHAT_REPOSITORY}:${DROPPED}`))) continue;
    // An image of someone's own built FROM a chat image inherits its labels: a name of another repository says it is not ours.
    if ((i.RepoTags ?? []).filter((t) => t !== '<none>:<none>').length > tags.length) continue;
    // By its name (or id when it has none), never forced. 409: a container still uses it; it goes at a later look.
    await docker
      .getImage(tags[0] ?? i.Id)
      .remove()
      .catch(() => {});
  }
}
