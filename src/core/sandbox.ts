/**
 * What the pipeline needs from a sandbox, whatever runs it. The Docker implementation lives in
 * src/docker; tests of pure logic use fakes.
 */
export interface ProgramRun {
  /** Python source, written as a file in a fresh directory; never part of a command line. */
  code: string;
  /** Receives output as it arrives; the sandbox must not buffer it whole. */
  onStdout(chunk: Buffer): void;
  onStderr(chunk: Buffer): void;
  /** Aborting stops the program (timeout, the user's Stop, an output flood). */
  signal: AbortSignal;
}

export interface ProgramExit {
  /** null when the program was stopped before it exited by itself. */
  exitCode: number | null;
  /** The fresh directory the program ran in, inside the sandbox. */
  workDir: string;
  /** The sandbox had to be replaced to stop the program (e.g. a fork bomb). */
  replaced?: boolean;
  /** Sentences for the model about what the sandbox had to do (e.g. it was reset). */
  notes?: string[];
}

export interface Sandbox {
  /** Stable for the sandbox's life; changes when it is replaced. */
  readonly id: string;
  readonly image: string;
  run(run: ProgramRun): Promise<ProgramExit>;
}

export interface SandboxProvider {
  /**
   * Get-or-create the sandbox for a session key. Keys come from the host (the chat session),
   * never from model input.
   */
  acquire(sessionKey: string, signal: AbortSignal): Promise<Sandbox>;
}
