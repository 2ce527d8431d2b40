import * as fs from 'node:fs';
import * as path from 'node:path';
import { ToolError } from '../core/errors';
import { sessionDigest } from '../core/session';
import { writeFileAtomic, type ArtifactStore, type SessionSummary } from '../storage/artifactStore';
import { NoRunsError, notebookText, sessionNotebook } from '../storage/notebook';

export interface ExportRequest {
  /** A CLI --session KEY, or the start (8 characters or more) of any session's folder name (an MCP session's). */
  session: string;
  keptStateOnly: boolean;
  /** Where to write; undefined: return the text for standard output. */
  out: string | undefined;
}

/** `codeact-sandbox export`: a CLI or MCP session's runs as an .ipynb. Returns the text when no file was named. */
export async function exportNotebook(store: ArtifactStore, request: ExportRequest): Promise<{ text: string; runs: number; written?: string }> {
  const sessions = await store.listSessions();
  const session = findSession(sessions, request.session);
  if (!session) {
    const known = sessions.map((s) => `${s.sessionLabel} (${s.sessionDigest.slice(0, 8)}, ${s.runCount} run${s.runCount === 1 ? '' : 's'})`);
    throw new ToolError(
      'invalid_input',
      `No session ${JSON.stringify(request.session)} has runs in ${store.root}. ${known.length ? `Sessions there: ${known.join(', ')}.` : 'It holds no runs.'}`,
    );
  }
  let result;
  try {
    result = await sessionNotebook(store, session.sessionDigest, { keptStateOnly: request.keptStateOnly });
  } catch (e) {
    if (e instanceof NoRunsError) {
      throw new ToolError('invalid_input', request.keptStateOnly ? `${e.sessionLabel ?? 'The session'} has no run whose state was kept.` : e.message, { cause: e });
    }
    throw e;
  }
  const text = notebookText(result.notebook);
  const runs = result.notebook.cells.length - 1;
  if (request.out === undefined) return { text, runs };
  const target = path.resolve(request.out);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  // Whole or not at all: an export cut short must not leave a truncated notebook where one was.
  writeFileAtomic(target, text);
  return { text, runs, written: target };
}

function findSession(sessions: readonly SessionSummary[], key: string): SessionSummary | undefined {
  const cli = sessionDigest(`cli:${key}`);
  const exact = sessions.find((s) => s.sessionDigest === cli || s.sessionDigest === key);
  if (exact) return exact;
  if (key.length < 8) return undefined;
  const byPrefix = sessions.filter((s) => s.sessionDigest.startsWith(key));
  return byPrefix.length === 1 ? byPrefix[0] : undefined;
}
