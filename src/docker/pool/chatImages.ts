/**
 * The chats' prepared images, as one process sees them: after a call of a chat that keeps its
 * state, the sandbox's user site is looked at (one stat through the engine) and, when pip or a
 * program changed it since the last look, the packages pip installed there are read into the
 * chat's image; a new sandbox for that chat is made from its image, so what it installed is there
 * again without a download. Across the chats of these records the images are bounded
 * (chatImageBudget.ts): the least recently used go first, and one unused for a month goes.
 *
 * All of it runs after the call has ended, one chat at a time; only the read of the user site
 * waits for the sandbox to be between calls, so a next call of the chat may wait for that read
 * (not for the build). A failure is logged and leaves the chat as it was (its next sandboxes
 * install again).
 */
import type Dockerode from 'dockerode';
import { describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { MAX_CHAT_GENERATIONS, MAX_CHAT_SITE_BYTES, buildChatImage, configuredBase, listChatImages, removeChatImage, removeDropped, siteStamp, userSitePackages, type ChatImage } from '../images';
import type { SandboxSpec } from '../container';
import type { DockerSandbox } from '../sandbox';
import { CHAT_IMAGE_UNUSED_MS, MAX_CHAT_IMAGES_BYTES, imagesToDrop, type DropReason } from './chatImageBudget';

/** What a new sandbox of a chat is made from, and the sentence its first program's result carries. */
export interface PreparedImage {
  tag: string;
  note: string;
}

/** The sentence a call made in a sandbox from the chat's image is told (names cut at 10). */
export function preparedNote(distributions: readonly string[]): string {
  const shown = distributions.slice(0, 10).join(', ');
  const more = distributions.length > 10 ? ` and ${distributions.length - 10} more` : '';
  const what = distributions.length ? `the Python packages installed earlier in this chat (${shown}${more})` : 'the files installed earlier in this chat into the Python user site';
  return `This chat's sandbox was made again from its prepared image, which has ${what}: they were not installed again, and pip finds them installed.`;
}

/**
 * The records the chats of this process are kept in (the VS Code window's run store). A chat image
 * made by a process of the same records whose chat has no records left (deleted or pruned while no
 * process of them ran) is removed when the images are first listed; another store's are left alone.
 */
export interface ChatRecords {
  /** Names the records (the same in every process that keeps them). */
  store: string;
  exists(session: string): Promise<boolean>;
  /** When the chat last had a call kept in the records (ms since the epoch), if it has one. */
  lastUsed?(session: string): Promise<number | undefined>;
}

/** The limits of the chats' images (tests make them small). */
export interface ChatImageLimits {
  /** What one chat's image may hold (diskBytes of its packages). */
  bytes: number;
  /** How many builds one chat's image may stack. */
  generations: number;
  /** What all chat images of these records may hold together. */
  totalBytes: number;
  /** An image not used for this long goes. */
  unusedMs: number;
}

const DEFAULT_LIMITS: ChatImageLimits = { bytes: MAX_CHAT_SITE_BYTES, generations: MAX_CHAT_GENERATIONS, totalBytes: MAX_CHAT_IMAGES_BYTES, unusedMs: CHAT_IMAGE_UNUSED_MS };

export class ChatImages {
  private listed: Promise<Map<string, ChatImage>> | undefined;
  /** Per chat: the captures asked for, one after the other. */
  private readonly work = new Map<string, Promise<void>>();
  /** Per chat: the stat of the user site last read (container id and stamp). */
  private readonly seen = new Map<string, string>();
  private readonly stop = new AbortController();
  private sweeping: Promise<void> = Promise.resolve();
  /** Per chat: when this process last built its image or made a sandbox from it. */
  private readonly used = new Map<string, number>();
  /** The budget's checks, one after the other. */
  private budgeting: Promise<void> = Promise.resolve();
  /** Removals of other chats' images the listing or the budget decided on, until each is done. */
  private readonly dropping = new Set<Promise<void>>();
  private readonly limits: ChatImageLimits;

  constructor(
    private readonly docker: Dockerode,
    private readonly log: Logger,
    private readonly records?: ChatRecords,
    limits: Partial<ChatImageLimits> = {},
    private readonly now: () => number = Date.now,
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /** The chats' images on the engine, listed once per process and kept up to date by it. */
  private images(): Promise<Map<string, ChatImage>> {
    if (!this.listed) void this.sweep(); // off the first call's way
    this.listed ??= listChatImages(this.docker)
      .then((images) => this.withoutOrphans(images))
      .then(async (images) => {
        await this.dropPast(images);
        return images;
      })
      .catch((e: unknown) => {
        this.log.info(`could not list the chats' prepared images: ${describeError(e)}`);
        this.listed = undefined;
        return new Map<string, ChatImage>();
      });
    return this.listed;
  }

  /** The images but those of chats of our records that have none left, which go (off the call's way). */
  private async withoutOrphans(images: Map<string, ChatImage>): Promise<Map<string, ChatImage>> {
    const records = this.records;
    if (!records) return images;
    for (const [session, image] of images) {
      if (image.store !== records.store || (await records.exists(session).catch(() => true))) continue;
      images.delete(session);
      this.log.info(`the chat of the prepared image ${image.tag} has no records left; the image is removed`);
      this.drop(session);
    }
    return images;
  }

  /**
   * Drops from `images` (and then from the engine, off the call's way) the images of these
   * records (ChatRecords.store) past the budget: made before bytes were counted, unused too long, or the least
   * recently used while all of them hold more than the limit. Their chats' next sandboxes install
   * again by replay; a read of a chat's user site after a drop builds its image again.
   */
  private async dropPast(images: Map<string, ChatImage>): Promise<void> {
    // The budget is one store's: a process without records (not the extension's) has none to hold.
    if (!this.records) return;
    const { store } = this.records;
    const ours = [...images.values()].filter((i) => i.store === store);
    const budgeted = await Promise.all(ours.map(async (i) => ({ session: i.session, bytes: i.bytes, lastUsed: await this.lastUsed(i) })));
    for (const { session, why } of imagesToDrop(budgeted, this.now(), this.limits)) {
      const image = images.get(session);
      if (!image) continue;
      images.delete(session);
      this.seen.delete(session);
      this.log.info(`the chat's prepared image ${image.tag} is removed: ${this.dropped(why)}; its chat's next sandbox installs its packages again by re-running its calls`);
      this.drop(session);
    }
  }

  /** Removes a chat's image after what its chat asked for before (a capture under way). */
  private drop(session: string): void {
    const done = this.queue(session, 'its image was not removed', () => removeChatImage(this.docker, this.log, session));
    this.dropping.add(done);
    void done.finally(() => this.dropping.delete(done));
  }

  private dropped(why: DropReason): string {
    if (why === 'earlier') return 'it was made by an earlier version, which kept more than installed packages';
    if (why === 'unused') return `it was not used for ${Math.round(this.limits.unusedMs / 86_400_000)} days`;
    return `the chats' images held more than ${this.limits.totalBytes} bytes, and it was used least recently`;
  }

  /** The image's last use: built, a sandbox made from it, or a call of its chat in the records. */
  private async lastUsed(image: ChatImage): Promise<number> {
    const recorded = await this.records?.lastUsed?.(image.session).catch(() => undefined);
    return Math.max(image.created, this.used.get(image.session) ?? 0, recorded ?? 0);
  }

  /** Checks the budget over the images listed (after a build), one check at a time. */
  private budget(): Promise<void> {
    const next = this.budgeting.then(async () => this.dropPast(await this.images())).catch((e: unknown) => this.log.info(`the chats' prepared images: the limits were not checked: ${describeError(e)}`));
    this.budgeting = next;
    return next;
  }

  /** Runs `step` after what the chat asked for before; a failure is logged as what did not happen. */
  private queue(session: string, failed: string, step: () => Promise<void>): Promise<void> {
    const next = (this.work.get(session) ?? Promise.resolve()).then(() => step().catch((e: unknown) => this.log.info(`the chat's prepared image: ${failed}: ${describeError(e)}`)));
    this.work.set(session, next);
    void next.finally(() => {
      if (this.work.get(session) === next) this.work.delete(session);
    });
    return next;
  }

  /** The image a new sandbox of this chat is made from, when it has one made on the image the settings name. */
  async imageFor(session: string, spec: SandboxSpec): Promise<PreparedImage | undefined> {
    const image = (await this.images()).get(session);
    if (!image || image.bytes === undefined) return undefined;
    let base: string | undefined;
    try {
      base = (await this.docker.getImage(spec.image).inspect()).Id;
    } catch {
      return undefined; // pulled or built on the way: the chat's image is built on an older one
    }
    if (image.base !== base) {
      this.log.info(`the chat's prepared image ${image.tag} was made on another image than ${spec.image}; its packages are installed again`);
      return undefined;
    }
    this.used.set(session, this.now());
    return { tag: image.tag, note: preparedNote(image.distributions) };
  }

  /** After a call that kept the chat's state: reads the user site into the chat's image if it changed. */
  afterCall(session: string, sandbox: DockerSandbox): void {
    void this.queue(session, 'the installed packages were not kept', () => this.capture(session, sandbox));
  }

  /** Resolves when what the chat's calls asked for so far, the budget's checks and the sweeps asked for, are done (tests; removal waits for it). */
  async settled(session: string): Promise<void> {
    await this.work.get(session);
    await this.budgeting;
    await Promise.all([...this.dropping]);
    await this.sweeping;
  }

  private async capture(session: string, sandbox: DockerSandbox): Promise<void> {
    if (this.stop.signal.aborted) return;
    const sitePath = userSitePackages(sandbox.runner?.info?.python);
    if (!sitePath) return;
    const stamp = await siteStamp(sandbox.container, sitePath);
    if (!stamp) return;
    const source = `${sandbox.id} ${stamp}`;
    const images = await this.images();
    const earlier = images.get(session);
    if (this.seen.get(session) === source || earlier?.source === source) return;
    const from = (await sandbox.container.inspect()).Image;
    // A sandbox made from the chat's image: the new one is built on it, and keeps its packages.
    const onEarlier = earlier !== undefined && earlier.bytes !== undefined && earlier.id === from;
    // The image the sandbox was made from, as the settings named it then: a sandbox outlives a
    // pull that moves the name, and its packages were installed on what it runs.
    const base = onEarlier ? earlier.base : await configuredBase(this.docker, from);
    // Read once, also when the build fails: a read that cannot be kept is not tried after every call.
    this.seen.set(session, source);
    const generation = onEarlier ? earlier.generation + 1 : 1;
    if (generation > this.limits.generations) throw new Error(`the chat's image stacks ${this.limits.generations} builds already`);
    // Stacked builds only add: what the earlier ones hold counts against the one limit.
    const earlierBytes = onEarlier ? (earlier.bytes ?? 0) : 0;
    if (earlierBytes >= this.limits.bytes) throw new Error(`the chat's image holds ${earlierBytes} bytes of packages already, its limit`);
    const built = await buildChatImage({
      docker: this.docker,
      log: this.log,
      container: sandbox.container,
      sitePath,
      between: (task) => sandbox.between(task),
      from,
      earlier: onEarlier ? earlier.distributions : [],
      earlierBytes,
      base,
      session,
      source,
      store: this.records?.store ?? '',
      generation,
      maxBytes: this.limits.bytes - earlierBytes,
      workAreaBytes: sandbox.spec.limits.workAreaMb * 1024 * 1024,
      signal: this.stop.signal,
    });
    images.set(session, built);
    this.used.set(session, this.now());
    // Read again from the same sandbox (made from the settings' image): the earlier image lost its tag to the new one.
    if (earlier && !onEarlier && earlier.id !== built.id) await this.sweep();
    this.log.info(`kept the chat's installed packages as its image ${built.tag} (${built.distributions.length} distributions, ${built.bytes} bytes)`);
    // Not awaited: it queues other chats' removals, which settled() waits for.
    void this.budget();
  }

  /** The chat is deleted: its image goes (after a capture under way). */
  async remove(session: string): Promise<void> {
    await this.settled(session);
    (await this.images()).delete(session);
    this.seen.delete(session);
    this.used.delete(session);
    await removeChatImage(this.docker, this.log, session);
    await this.sweep();
  }

  /** Every chat's records were deleted: every chat image of these records goes (another workspace's stay). */
  async removeAll(): Promise<void> {
    const store = this.records?.store ?? '';
    const ours = (images: Map<string, ChatImage>) => [...images.values()].filter((i) => i.store === store).map((i) => i.session);
    const sessions = [...ours(await this.images()), ...ours(await listChatImages(this.docker).catch(() => new Map<string, ChatImage>()))];
    for (const session of new Set(sessions)) await this.remove(session);
  }

  /**
   * A sandbox went: a chat image deleted (or read again) while that sandbox ran from it has no
   * name a chat finds and is unused now, so it goes (one listing; one still in use stays for a later look).
   */
  sweep(): Promise<void> {
    const next = this.sweeping.then(() => removeDropped(this.docker).catch(() => {}));
    this.sweeping = next;
    return next;
  }

  dispose(): void {
    this.stop.abort();
  }
}
