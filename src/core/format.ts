import type { CapturedStream } from './capture';

/** The sentence a model gets when its program printed nothing: the commonest first mistake. */
export const NOTHING_PRINTED =
  'The program ran and printed nothing. Only what the program prints comes back: end it with print(...) of everything you need to see.';

export interface RunFacts {
  stdout: CapturedStream;
  stderr: CapturedStream;
  /** null when the program was stopped before it exited on its own. */
  exitCode: number | null;
  timedOut?: { seconds: number };
  cancelled?: boolean;
  outputLimited?: { maxBytes: number };
  /**
   * Set only when the kernel's OOM killer or the engine says the program was killed for memory;
   * a SIGKILL from anywhere else is not blamed on memory.
   */
  oomKilled?: { memoryLimitMb?: number };
  /** Extra lines appended as-is (e.g. about files), already phrased for the model. */
  notes?: string[];
}

/**
 * The text the model receives. Empty sections are left out, the newline `print` leaves at the
 * end is dropped, and each stream is cut to its share of `budgetBytes` keeping head and tail.
 */
export function formatResult(facts: RunFacts, budgetBytes: number): string {
  const { stdout, stderr } = shownStreams(facts, budgetBytes);
  const sections: string[] = [];
  if (stdout) sections.push(`stdout:\n${stdout}`);
  if (stderr) sections.push(`stderr:\n${stderr}`);
  if (facts.exitCode !== null && facts.exitCode !== 0) sections.push(`exit code: ${facts.exitCode}`);
  if (facts.timedOut) {
    sections.push(
      `The program did not finish within ${facts.timedOut.seconds} s and was stopped. Make it faster, work on less data, or print partial results as you go.`,
    );
  } else if (facts.cancelled) {
    sections.push('The run was cancelled by the user and the program was stopped.');
  } else if (facts.outputLimited) {
    sections.push(
      `The program printed more than ${formatBytes(facts.outputLimited.maxBytes)} and was stopped. Print summaries instead of whole data sets.`,
    );
  } else if (facts.oomKilled) {
    const limit = facts.oomKilled.memoryLimitMb;
    sections.push(
      `The program was killed because it used more than the sandbox's ${limit !== undefined ? `${limit} MB ` : ''}memory limit. Process the data in smaller pieces.`,
    );
  }
  // Exit 137 without that word from the kernel or the engine: the exit code is all that is known.
  for (const note of facts.notes ?? []) sections.push(note);
  if (sections.length === 0) return NOTHING_PRINTED;
  if (!stdout && !stderr && facts.exitCode === 0 && sections.length > 0 && !facts.timedOut && !facts.cancelled) {
    sections.unshift(NOTHING_PRINTED);
  }
  return sections.join('\n\n');
}

/** Each stream as the model sees it: cut to its share of `budgetBytes`, the final newline dropped. */
export function shownStreams(facts: Pick<RunFacts, 'stdout' | 'stderr'>, budgetBytes: number): { stdout: string; stderr: string } {
  const [outBudget, errBudget] = splitBudget(facts.stdout.totalBytes, facts.stderr.totalBytes, budgetBytes);
  return { stdout: clip(facts.stdout, outBudget), stderr: clip(facts.stderr, errBudget) };
}

/**
 * Shares the budget between the streams: each gets what it needs when both fit, otherwise the
 * smaller keeps up to half and the larger gets the rest.
 */
export function splitBudget(outBytes: number, errBytes: number, budget: number): [number, number] {
  if (outBytes + errBytes <= budget) return [outBytes, errBytes];
  const half = Math.floor(budget / 2);
  if (outBytes <= half) return [outBytes, budget - outBytes];
  if (errBytes <= half) return [budget - errBytes, errBytes];
  return [budget - half, half];
}

/** Head and tail of a stream within `budget` bytes, with a marker saying how much was left out. */
export function clip(stream: CapturedStream, budget: number): string {
  const whole = stream.head.length + stream.tail.length === stream.totalBytes;
  if (whole && stream.totalBytes <= budget) {
    return Buffer.concat([stream.head, stream.tail]).toString('utf8').replace(/\r?\n$/, '');
  }
  const headBudget = Math.ceil(budget / 2);
  const tailBudget = budget - headBudget;
  const head = cutUtf8Start(stream.head, headBudget);
  const tailSource = whole ? Buffer.concat([stream.head, stream.tail]) : stream.tail;
  const tail = cutUtf8End(tailSource, tailBudget);
  const omitted = stream.totalBytes - head.length - tail.length;
  const headText = head.toString('utf8');
  const tailText = tail.toString('utf8').replace(/\r?\n$/, '');
  const sep1 = headText.endsWith('\n') || headText === '' ? '' : '\n';
  return `${headText}${sep1}[... ${omitted} bytes left out ...]\n${tailText}`;
}

/** The first at most `n` bytes, not ending inside a UTF-8 sequence. */
function cutUtf8Start(buf: Buffer, n: number): Buffer {
  if (buf.length <= n) return buf;
  let end = n;
  // Back off continuation bytes, then the lead byte whose sequence they belong to.
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.subarray(0, end);
}

/** The last at most `n` bytes, not starting inside a UTF-8 sequence. */
function cutUtf8End(buf: Buffer, n: number): Buffer {
  if (buf.length <= n) return buf;
  let start = buf.length - n;
  while (start < buf.length && (buf[start]! & 0xc0) === 0x80) start++;
  return buf.subarray(start);
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KB`;
  return `${(n / (1024 * 1024)).toFixed(n < 10 * 1024 * 1024 ? 1 : 0)} MB`;
}
