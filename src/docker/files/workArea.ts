import type Dockerode from 'dockerode';
import { ToolError, describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import type { ProgramRun } from '../../core/sandbox';
import { archiveOf, type ArchiveEntry } from './archive';
import { SandboxGoneError, isNoSpace, withDeadline } from '../engine';
import { RUNS_DIR, WORK_ROOT } from '../container';
import { runArchive } from './runArchive';
import { runsFolderProblem } from './transfer';

/** Lays out /sandbox (a tmpfs: empty after every start): home, tmp and the runs folder, and `extra` (a sandbox's tls folder). */
export async function layOutWorkArea(container: Dockerode.Container, deadlineMs: number, extra: readonly ArchiveEntry[] = []): Promise<void> {
  const layOut = () =>
    withDeadline(
      container.putArchive(
        archiveOf([
          { type: 'directory', name: 'home' },
          { type: 'directory', name: 'tmp' },
          { type: 'directory', name: 'runs' },
          ...extra,
        ]),
        { path: WORK_ROOT },
      ),
      deadlineMs,
      'prepare work area',
    );
  try {
    await layOut();
  } catch (e) {
    // The warm runner makes the same folders as it starts; when both do it at the same moment the
    // engine's extraction meets the runner's folder ("mkdir ...: file exists", a plain 500 with no
    // code of its own). Once more finds them there, which is all the layout needs.
    if (!/file exists/i.test(describeError(e))) throw e;
    await layOut();
  }
}

/** What copying a call's files needs of its sandbox. */
export interface WorkAreaHost {
  readonly container: Dockerode.Container;
  readonly name: string;
  readonly log: Logger;
  readonly spec: { limits: { workAreaMb: number } };
  /** Kill everything and start again, with an empty work area. */
  restart(): Promise<void>;
  /** Whether the container still runs. */
  isAlive(): Promise<boolean>;
}

/**
 * Copies the program and the shared files into runs/<callId>. A work area full of earlier calls'
 * files is reset once (the sandbox restarts) rather than failing the call; files that do not fit
 * even then are the model's to make smaller. Returns what the model must be told.
 */
export async function putRunFiles(host: WorkAreaHost, callId: string, run: ProgramRun, deadlineMs: number): Promise<string[]> {
  const { workAreaMb } = host.spec.limits;
  const notes: string[] = [];
  const problem = await withDeadline(runsFolderProblem(host.container, RUNS_DIR), deadlineMs, 'check the work area');
  if (problem) {
    // A stopped container's tmpfs is gone, so its runs folder reads as removed: that sandbox is
    // gone (it is replaced, and the model told so), not tampered with.
    if (!(await host.isAlive())) throw new SandboxGoneError('the sandbox container is not running');
    // A program made it so; a restart lays the work area out again (a tmpfs: empty after it).
    host.log.warn(`sandbox ${host.name}: ${problem}; restarting it before copying files in`);
    await host.restart();
    notes.push(`The sandbox's work area had been changed so that nothing could be copied into it safely (${problem}), so the sandbox was restarted first; files written by earlier calls are gone.`);
  }
  const put = async () => {
    const body = runArchive(`runs/${callId}`, run.code, run.files ?? []);
    try {
      await withDeadline(
        host.container.putArchive(body, { path: WORK_ROOT }),
        // Shared files can be large; the deadline guards a hung engine, not a slow disk.
        deadlineMs + (run.files ?? []).reduce((t, f) => t + f.size, 0) / 10_000,
        'copy the program into the sandbox',
      );
    } finally {
      // Sent, refused or past its deadline: the files it read are closed either way.
      body.destroy();
    }
  };
  try {
    await put();
    return notes;
  } catch (e) {
    if (!isNoSpace(e)) throw e;
  }
  host.log.warn(`sandbox ${host.name}: work area full, restarting it`);
  await host.restart();
  try {
    await put();
  } catch (e) {
    if (!isNoSpace(e)) throw e;
    const mb = Math.ceil(((run.files ?? []).reduce((t, f) => t + f.size, 0) + Buffer.byteLength(run.code)) / (1024 * 1024));
    throw new ToolError(
      'invalid_input',
      `The shared files and the program (${mb} MB) do not fit the sandbox's work area (${workAreaMb} MB). Share fewer or smaller files, or ask the user to make the work area larger.`,
      { cause: e },
    );
  }
  return [`The sandbox's work area (${workAreaMb} MB) was full, so it was reset before this run; files written by earlier calls are gone.`];
}
