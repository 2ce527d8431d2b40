import type Dockerode from 'dockerode';
import type { Logger } from '../../core/logger';
import type { Clock } from '../../core/clock';
import type { SandboxFactory } from '../sandbox';
import type { PullProgress } from '../images';
import type { LockAhead, Owner, SandboxSpec } from '../container';
import type { ChatImageLimits, ChatRecords } from './chatImages';

/** What a DockerSandboxProvider is made with: the engine, the settings, the limits, and its seams. */
export interface ProviderOptions {
  docker: Dockerode;
  owner: Owner;
  /**
   * Read at every acquire, so a changed setting applies to the next call. May be async (the
   * Dev Container backend builds or finds its image here); a ToolError it throws fails the call.
   */
  spec: (signal: AbortSignal) => SandboxSpec | Promise<SandboxSpec>;
  /**
   * For pre-warming: the spec when it can be had without asking the user, building or pulling,
   * else undefined (then nothing is created ahead of the call). Without it, pre-warming uses
   * `spec`, which must then be free of such effects (the CLI's and the tests' are).
   */
  prewarmSpec?: () => Promise<SandboxSpec | undefined>;
  /** How to name the image setting in a model-facing error ("the setting codeactSandbox.image"). */
  imageSettingHint: string;
  /** How to name the runtime setting in a model-facing error (default: "the runtime setting"). */
  runtimeSettingHint?: string;
  log: Logger;
  /** Idle sandboxes are removed after this long; 0 keeps them until disposal. */
  idleMs: number;
  /** Called while an image is pulled; the VS Code layer shows a cancellable notification. */
  onPull?: (image: string, run: (progress: PullProgress, signal: AbortSignal) => Promise<void>) => Promise<void>;
  /**
   * For the CLI: sessions outlive the process. The session's sandbox is found by its labels (or
   * created under a name derived from the session, so two processes cannot create two), and each
   * process holds the sandbox's cross-process lock from acquire until it releases the sandbox or
   * is disposed: runs of one session never overlap, whichever process starts them.
   */
  adoptExisting?: boolean;
  /** With `adoptExisting`: the session sandbox's lock, asked for as the process started (the CLI's run). */
  lockAhead?: LockAhead;
  /**
   * With `adoptExisting`: a session's lock stays held between its calls, until `detachAll` (the
   * command line's session keeper, which runs one session's calls one after the other): each call
   * then skips the lock's exec. Another process waits for the lock until this one lets it go.
   */
  keepLock?: boolean;
  /**
   * Sandboxes kept created, hardened and preloading with no session (the hosts pass the
   * spareSandboxes setting; unset: none). A new session's first call takes one, and a replacement
   * is made once that call is over. With `adoptExisting` the spares are on the engine for any
   * process of the same owner kind and version to take; otherwise they are this process's.
   */
  spareSandboxes?: number;
  /**
   * With `adoptExisting` and spares: who tops the engine's pool up after a call whose new session
   * took a spare or made its sandbox. Unset: this provider, and `detachAll` waits for it. The CLI
   * hands it to a process of its own, so a run ends when its result is printed.
   */
  spareMaker?: (spec: SandboxSpec) => void;
  /**
   * Most sandboxes this provider keeps at once, spares included (the hosts pass the maxSandboxes
   * setting; unset: no limit). Past it the least recently used idle one is removed (its session
   * is told at its next call); when every one is in use, a call waits, cancellably, for room.
   */
  maxSandboxes?: number;
  /**
   * Keep the packages a chat that keeps its state installed as the chat's image (chatImages.ts),
   * and make its next sandboxes from it. Not with `adoptExisting` (a kept session's sandbox is
   * found again by its settings, which name the configured image).
   */
  keepChatImages?: boolean;
  /** With keepChatImages: the records the chats are kept in, so an image whose chat has none left goes. */
  chatRecords?: ChatRecords;
  /** With keepChatImages: the limits of the chats' images (defaults: chatImages.ts; tests make them small). */
  chatImageLimits?: Partial<ChatImageLimits>;
  /** Where this process's sandboxes come from (default: createSandbox on `docker`; tests: fakes). */
  sandboxes?: SandboxFactory;
  /** The time of last use and the idle sweep's timer (default: the system's; tests: a fake). */
  clock?: Clock;
}
