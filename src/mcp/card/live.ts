import { createHash, randomBytes } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import type { CardResults } from './contract';
import { CARD_STREAM_CHARS } from './names';

/**
 * The calls running now, for their cards' live view. A card appears while its call runs, and
 * knows only the call's input (the host hands it as tool-input); the server knows the input too.
 * So a card claims the running call whose input is exactly its own (the oldest unclaimed one),
 * and gets a claim only it holds: reading the output, or stopping the call, needs it. Two calls
 * of exactly the same input running at once in one window may swap their cards' live views;
 * each card's final result is its own call's all the same.
 */
export class LiveCalls {
  private readonly byClaim = new Map<string, LiveCall>();
  private readonly running = new Set<LiveCall>();

  /** A call starting: `stop` ends it (the card's Stop). Call `end` when it is over. */
  begin(input: unknown, stop: () => void): LiveCall {
    const call = new LiveCall(inputDigest(input), stop, () => {
      this.running.delete(call);
      if (call.claim) this.byClaim.delete(call.claim);
    });
    this.running.add(call);
    return call;
  }

  /** The claim on the oldest running, unclaimed call whose input is `input`; undefined when none. */
  claim(input: unknown): string | undefined {
    const digest = inputDigest(input);
    for (const call of this.running) {
      if (call.digest === digest && !call.claim) {
        call.claim = randomBytes(18).toString('base64url');
        this.byClaim.set(call.claim, call);
        return call.claim;
      }
    }
    return undefined;
  }

  /** What the claimed call printed since the offsets; an ended or unknown claim reads as not running. */
  poll(claim: string, stdoutFrom: number, stderrFrom: number): CardResults['poll'] {
    const call = this.byClaim.get(claim);
    if (!call) return { running: false, elapsedMs: 0, stdout: '', stderr: '', stdoutFrom, stderrFrom };
    const out = call.stdout.since(stdoutFrom);
    const err = call.stderr.since(stderrFrom);
    return { running: true, elapsedMs: Date.now() - call.started, stdout: out.text, stderr: err.text, stdoutFrom: out.next, stderrFrom: err.next };
  }

  /** Stops the claimed call; false when it is not running (any more). */
  stop(claim: string): boolean {
    const call = this.byClaim.get(claim);
    if (!call) return false;
    call.stop();
    return true;
  }
}

export class LiveCall {
  claim: string | undefined;
  readonly started = Date.now();
  readonly stdout = new LiveStream();
  readonly stderr = new LiveStream();

  constructor(
    readonly digest: string,
    readonly stop: () => void,
    readonly end: () => void,
  ) {}

  output(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    this[stream].write(chunk);
  }
}

/** One stream's text as it comes, of which the last CARD_STREAM_CHARS are kept for a card that reads late. */
class LiveStream {
  private readonly decoder = new StringDecoder('utf8');
  private text = '';
  /** Characters written before `text` starts. */
  private dropped = 0;

  write(chunk: Buffer): void {
    this.text += this.decoder.write(chunk);
    if (this.text.length > 2 * CARD_STREAM_CHARS) {
      const cut = this.text.length - CARD_STREAM_CHARS;
      this.text = this.text.slice(cut);
      this.dropped += cut;
    }
  }

  /** The text from character `from` on (or from the oldest kept), and where the next read starts. */
  since(from: number): { text: string; next: number } {
    const start = Math.max(0, from - this.dropped);
    return { text: this.text.slice(start), next: this.dropped + this.text.length };
  }
}

/** The same input, whatever the order of its keys: a digest of its canonical JSON. */
export function inputDigest(input: unknown): string {
  return createHash('sha256').update(canonical(input)).digest('hex');
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
