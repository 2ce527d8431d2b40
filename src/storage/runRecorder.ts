import type { Readable } from 'node:stream';
import { sessionDigest, sessionDisplayName } from '../core/session';
import type { RunRecorder } from '../core/toolCall';
import type { StateRun } from '../core/state';
import type { ArtifactStore, RunWriter } from './artifactStore';

/**
 * One execute_code call's record in the artifact store, as the pipeline's `RunRecorder`: the one
 * adapter every host (VS Code, the CLI, the MCP server) passes as `record`. The run is begun in
 * the store on first use, under the session's digest and display name.
 */
export class RunRecording {
  private current: RunWriter | undefined;

  constructor(
    private readonly store: ArtifactStore,
    private readonly sessionKey: string,
  ) {}

  /** The run's writer, begun now if it was not yet (a host that names the files folder up front). */
  get writer(): RunWriter {
    this.current ??= this.store.beginRun(sessionDigest(this.sessionKey), sessionDisplayName(this.sessionKey));
    return this.current;
  }

  /** The writer if the run was begun, so a host can find the files after the call. */
  get begun(): RunWriter | undefined {
    return this.current;
  }

  /** For `ToolCallOptions.stateRuns`: the chat's session runs, for a resume. */
  readonly stateRuns = (): Promise<StateRun[]> => this.store.stateRuns(sessionDigest(this.sessionKey));

  /** For `ToolCallOptions.record`. */
  readonly record = (): RunRecorder => {
    const w = this.writer;
    return {
      dir: w.dir,
      // The pipeline hands on the sandbox's tar entry streams, which are Readables.
      addFile: (name, body, size) => w.addFile(name, body as Readable, size),
      finish: (outcome) => w.finish(outcome),
      discard: () => w.discard(),
    };
  };
}
