import type { FilesOutCaps } from './limits';
import type { InstalledDistribution } from './missingModule';
import type { NetworkActivity } from './network';
import type { StateOutcome } from './state';

/**
 * A shared file's bytes, read where the caller says into a buffer the caller owns: the transfer
 * reads a large file through a few buffers it uses again, where a stream would hand it a fresh
 * buffer per chunk (fresh memory, a page fault per 4 KB).
 */
export interface StagedReader {
  /** Reads into `into` from `position`; the number of bytes read, 0 at the end of the file. */
  read(into: Buffer, position: number): Promise<number>;
  close(): Promise<void>;
}

/** What a workspace source says of a file it may share: its size, and how to read it. */
export interface SharedContent {
  /** Size checked against the caps; the transfer refuses a file whose length differs. */
  size: number;
  /** Opened only when the file is sent. */
  open(): Promise<StagedReader>;
}

/** A workspace file to place in the call's directory under its workspace-relative name. */
export interface StagedFile extends SharedContent {
  /** Validated workspace-relative name ('/'-separated). */
  name: string;
}

/**
 * A shared file that is no longer what was checked: `replaced` when its name now leads to another
 * file, a link or a FIFO; `resized` when its length differs from the size checked against the caps.
 */
export class SharedFileChangedError extends Error {
  constructor(
    readonly how: 'replaced' | 'resized',
    options?: { cause?: unknown },
  ) {
    super(`the shared file was ${how} after it was checked`, options);
    this.name = 'SharedFileChangedError';
  }
}

/** A reader of bytes already in memory (a remote workspace's file, read whole; a test's). */
export function bytesReader(bytes: Uint8Array): StagedReader {
  return {
    read: async (into, position) => {
      const part = bytes.subarray(Math.min(position, bytes.length), Math.min(position + into.length, bytes.length));
      into.set(part);
      return part.length;
    },
    close: async () => undefined,
  };
}

export interface ProgramRun {
  /** Python source, written as a file in a fresh directory; never part of a command line. */
  code: string;
  files?: readonly StagedFile[];
  /** Receives output as it arrives; the sandbox must not buffer it whole. */
  onStdout(chunk: Buffer): void;
  onStderr(chunk: Buffer): void;
  /** Aborting stops the program (timeout, the user's Stop, an output flood). */
  signal: AbortSignal;
  /**
   * A sandbox calls this when the program starts: the time limit counts from here. Waiting behind
   * the chat's other calls (a sandbox runs them one at a time), for a runner that starts over to
   * preload, or for the call's files to be copied in does not count against it; each such wait
   * has a deadline of its own.
   */
  onStart(): void;
  /** Session mode: run on the state the chat's last kept call left (an empty one with `reset`). */
  state?: { reset: boolean };
  /** A replayed run: the directory it first ran in (a sandbox checks it is one of its own kind). */
  workDir?: string;
  /**
   * Session mode: the sandbox was found gone as this program was to start and a new one took its
   * place; the chat's state is rebuilt in it first. True when something was rebuilt (or tried):
   * its sentence then says what became of the earlier work.
   */
  rebuildState?(): Promise<boolean>;
  /** The chat's state was rebuilt (or tried) before this run, and the call says so: a note that earlier work is gone would contradict it. */
  stateRebuilt?: boolean;
}

export interface ProgramExit {
  /** null when the program was stopped before it exited by itself. */
  exitCode: number | null;
  /** The fresh directory the program ran in, inside the sandbox. */
  workDir: string;
  /** The sandbox had to be replaced to stop the program (e.g. a fork bomb). */
  replaced?: boolean;
  /** The kernel's OOM killer (or the engine) says the program was killed for memory. */
  oomKilled?: boolean;
  /** Sentences for the model about what the sandbox had to do (e.g. it was reset). */
  notes?: string[];
  /** Session mode: what the call did to the state; absent when the program did not run on one (docker exec). */
  state?: StateOutcome;
  /** A sandbox with a network: what the program did on it, as the proxy saw it. */
  network?: NetworkActivity;
}

export interface CollectedFile {
  name: string;
  size: number;
  /** Decided by the host from the bytes, never by the program. */
  mediaType?: string;
}

export interface CollectOutcome {
  saved: CollectedFile[];
  /** Asked for but not there. */
  missing: string[];
  refused: { name: string; reason: string }[];
}

/** Receives one produced file as a stream of exactly `size` bytes and stores it. */
export type OutputSink = (name: string, size: number, body: NodeJS.ReadableStream) => Promise<CollectedFile>;

/**
 * What the pipeline needs from a sandbox, whatever runs it. The Docker implementation lives in
 * src/docker; tests of pure logic use fakes.
 */
export interface Sandbox {
  /** Stable for the sandbox's life; changes when it is replaced. */
  readonly id: string;
  readonly image: string;
  /** The OCI runtime it runs under (runsc for gVisor, runc, ...), when the backend knows it. */
  readonly runtime?: string;
  /**
   * How the user adds Python packages to this sandbox's image, as the hint for a missing module
   * names it ("codeactSandbox.pythonPackages"); unset when they cannot (an image they chose).
   */
  readonly packagesSetting?: string;
  /** The Python distributions the image has, when the backend knows them (from the image, not a list). */
  installed?(): Promise<readonly InstalledDistribution[] | undefined>;
  run(run: ProgramRun): Promise<ProgramExit>;
  /**
   * True when no session state can be in the sandbox: nothing kept a state since it was made
   * (or restarted), or it is gone and was replaced just now. Then a chat's recorded state may be
   * rebuilt in it before the next call. False: it holds one, or cannot tell; nothing is rebuilt.
   */
  holdsNoState?(signal: AbortSignal): Promise<boolean>;
  /** Replaces the session's sandbox with a new one holding nothing; `why` is for the log. */
  renew?(signal: AbortSignal, why: string): Promise<void>;
  /**
   * Collects files a finished call wrote, by literal path relative to its directory. Whatever
   * the program left running is stopped first, so nothing changes the files while they are read.
   */
  collect(workDir: string, names: readonly string[], caps: FilesOutCaps, sink: OutputSink): Promise<CollectOutcome>;
  /**
   * The call is over (its outputs collected): the provider may now replace or remove the
   * sandbox, and other processes may use it. Optional; called once, at the end of every call.
   */
  release?(): Promise<void>;
}

export interface SandboxProvider {
  /**
   * Get-or-create the sandbox for a session key. Keys come from the host (the chat session),
   * never from model input.
   */
  acquire(sessionKey: string, signal: AbortSignal): Promise<Sandbox>;
  /**
   * Optional: start creating the session's sandbox now (e.g. when its chat is about to call the
   * tool), so the first call finds it warm. Never throws; failures surface at the call.
   */
  prewarm?(sessionKey: string): void;
  /**
   * Optional: the session's sandbox as the provider holds it now, answered without asking the
   * engine: undefined when it holds none (the session's next call makes one, which holds no
   * state); else its id, and whether it may hold a session state (false: nothing kept one in it
   * since it was made). A sandbox removed behind the provider's back is found only at the call.
   */
  sessionSandbox?(sessionKey: string): { id: string; mayHoldState: boolean } | undefined;
}
