/**
 * The chats' prepared images, as one process sees them: after a call of a chat that keeps its
 * state, the sandbox's user site is looked at (one stat through the engine) and, when pip or a
 * program changed it since the last look, read into the chat's image; a new sandbox for that chat
 * is made from its image, so what it installed is there again without a download.
 *
 * All of it runs after the call has ended, one chat at a time: no call waits for it. A failure is
 * logged and leaves the chat as it was (its next sandboxes install again).
 */
import type Dockerode from 'dockerode';
import { describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { MAX_CHAT_GENERATIONS, MAX_CHAT_SITE_BYTES, buildChatImage, configuredBase, listChatImages, removeChatImage, removeDropped, siteStamp, userSitePackages, type ChatImage } from '../images';
import type { SandboxSpec } from '../container';
import type { DockerSandbox } from '../sandbox';

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
}

/** How large a chat's image may grow, and how many builds it may stack (tests make them small). */
export interface ChatImageLimits {
  bytes: number;
  generations: number;
}

export class ChatImages {
  private listed: Promise<Map<string, ChatImage>> | undefined;
  /** Per chat: the captures asked for, one after the other. */
  private readonly work = new Map<string, Promise<void>>();
  /** Per chat: the stat of the user site last read (container id and stamp). */
  private readonly seen = new Map<string, string>();
  private readonly stop = new AbortController();
  private sweeping: Promise<void> = Promise.resolve();

  constructor(
    private readonly docker: Dockerode,
    private readonly log: Logger,
    private readonly records?: ChatRecords,
    private readonly limits: ChatImageLimits = { bytes: MAX_CHAT_SITE_BYTES, generations: MAX_CHAT_GENERATIONS },
  ) {}

  /** The chats' images on the engine, listed once per process and kept up to date by it. */
  private images(): Promise<Map<string, ChatImage>> {
    if (!this.listed) void this.sweep(); // off the first call's way
    this.listed ??= listChatImages(this.docker)
      .then((images) => this.withoutOrphans(images))
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
      this.queue(session, 'its image was not removed', () => removeChatImage(this.docker, this.log, session));
    }
    return images;
  }

  /** Runs `step` after what the chat asked for before; a failure is logged as what did not happen. */
  private queue(session: string, failed: string, step: () => Promise<void>): void {
    const next = (this.work.get(session) ?? Promise.resolve()).then(() => step().catch((e: unknown) => this.log.info(`the chat's prepared image: ${failed}: ${describeError(e)}`)));
    this.work.set(session, next);
    void next.finally(() => {
      if (this.work.get(session) === next) this.work.delete(session);
    });
  }

  /** The image a new sandbox of this chat is made from, when it has one made on the image the settings name. */
  async imageFor(session: string, spec: SandboxSpec): Promise<PreparedImage | undefined> {
    const image = (await this.images()).get(session);
    if (!image) return undefined;
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
    return { tag: image.tag, note: preparedNote(image.distributions) };
  }

  /** After a call that kept the chat's state: reads the user site into the chat's image if it changed. */
  afterCall(session: string, sandbox: DockerSandbox): void {
    this.queue(session, 'the installed packages were not kept', () => this.capture(session, sandbox));
  }

  /** Resolves when what the chat's calls asked for so far, and the sweeps asked for, are done (tests; removal waits for it). */
  async settled(session: string): Promise<void> {
    await this.work.get(session);
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
    const onEarlier = earlier !== undefined && earlier.id === from;
    // The image the sandbox was made from, as the settings named it then: a sandbox outlives a
    // pull that moves the name, and its packages were installed on what it runs.
    const base = onEarlier ? earlier.base : await configuredBase(this.docker, from);
    // Read once, also when the build fails: a read that cannot be kept is not tried after every call.
    this.seen.set(session, source);
    const generation = onEarlier ? earlier.generation + 1 : 1;
    if (generation > this.limits.generations) throw new Error(`the chat's image stacks ${this.limits.generations} builds already`);
    // Stacked builds only add: what the earlier ones added counts against the one cap.
    const added = onEarlier ? (await this.docker.getImage(from).inspect()).Size - (await this.docker.getImage(base).inspect()).Size : 0;
    if (added >= this.limits.bytes) throw new Error(`the chat's image holds ${added} bytes of packages already, its limit`);
    const built = await buildChatImage({
      docker: this.docker,
      log: this.log,
      container: sandbox.container,
      sitePath,
      from,
      earlier: onEarlier ? earlier.distributions : [],
      base,
      session,
      source,
      store: this.records?.store ?? '',
      generation,
      maxBytes: this.limits.bytes - added,
      signal: this.stop.signal,
    });
    images.set(session, built);
    // Read again from the same sandbox (made from the settings' image): the earlier image lost its tag to the new one.
    if (earlier && !onEarlier && earlier.id !== built.id) await this.sweep();
    this.log.info(`kept the chat's installed packages as its image ${built.tag} (${built.distributions.length} distributions)`);
  }

  /** The chat is deleted: its image goes (after a capture under way). */
  async remove(session: string): Promise<void> {
    await this.settled(session);
    (await this.images()).delete(session);
    this.seen.delete(session);
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
