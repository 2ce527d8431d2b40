/**
 * The card while its call runs: "Running N lines of Python…", the time so far, Stop, and the output
 * as it comes. card_live finds the running call by its input; without a claim (another chat's
 * call, a host that hid it) the card shows the running line alone until the result comes.
 */
import { CARD_STREAM_CHARS } from '../names';
import { button, el } from './dom';
import { reason, text } from './data';
import { duration, runningLine } from './format';
import { StreamView } from './streams';
import type { CallTool } from './tools';

/** How long the card waits between polls: output appears within a third of a second. */
const POLL_MS = 300;
/** How often the clock is redrawn. */
const TICK_MS = 200;

export class LiveView {
  readonly element: HTMLElement;
  private readonly title: HTMLElement;
  private readonly clock = el('span', { class: 'elapsed muted' }, duration(0));
  private readonly stop = button('Stop', () => this.stopRun(), { class: 'stop', hidden: '' });
  private readonly stdout = new StreamView('stdout');
  private readonly stderr = new StreamView('stderr');
  private readonly message = el('p', { class: 'message', role: 'status' });
  private readonly text = { stdout: '', stderr: '' };
  private readonly dropped = { stdout: 0, stderr: 0 };
  private readonly from = { stdoutFrom: 0, stderrFrom: 0 };
  /** The server's elapsed time at the last poll, and when that answer came (the clock runs on from it). */
  private since = { elapsed: 0, at: performance.now() };
  private claim: string | undefined;
  private ticking: ReturnType<typeof setInterval> | undefined;
  private ended = false;

  constructor(
    input: Record<string, unknown>,
    private readonly callTool: CallTool,
  ) {
    this.title = el('h2', { class: 'title' }, runningLine(input.code));
    this.element = el(
      'article',
      { class: 'card', 'aria-busy': 'true' },
      el('header', { class: 'head running' }, el('span', { class: 'spinner', 'aria-hidden': 'true' }), this.title, this.clock, this.stop),
      el('div', { class: 'streams' }, this.stdout.element, this.stderr.element),
      this.message,
    );
    this.ticking = setInterval(() => this.tick(), TICK_MS);
    this.callTool('live', { input }).then(
      (result) => {
        const claim = text(result.claim);
        if (this.ended || claim === '') return;
        this.claim = claim;
        this.stop.hidden = false;
        void this.poll(claim);
      },
      () => {
        // No live view for this call: the running line stays until the result.
      },
    );
  }

  /** The result (or a cancel) came: no more polls, no more ticks. */
  end(): void {
    this.ended = true;
    if (this.ticking !== undefined) clearInterval(this.ticking);
    this.ticking = undefined;
  }

  private tick(): void {
    this.clock.textContent = duration(this.since.elapsed + (performance.now() - this.since.at));
  }

  private async poll(claim: string): Promise<void> {
    while (!this.ended) {
      let result;
      try {
        result = await this.callTool('poll', { claim, ...this.from });
      } catch (error) {
        if (!this.ended) this.message.textContent = `Live output stopped: ${reason(error)}`;
        return;
      }
      if (this.ended) return;
      this.since = { elapsed: result.elapsedMs, at: performance.now() };
      this.from.stdoutFrom = result.stdoutFrom;
      this.from.stderrFrom = result.stderrFrom;
      this.add('stdout', text(result.stdout));
      this.add('stderr', text(result.stderr));
      if (!result.running) {
        this.finishing();
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** Adds what a poll brought; the view keeps a long stream's end and counts the start it let go. */
  private add(stream: 'stdout' | 'stderr', more: string): void {
    if (more === '') return;
    let all = this.text[stream] + more;
    if (all.length > CARD_STREAM_CHARS) {
      this.dropped[stream] += all.length - CARD_STREAM_CHARS;
      all = all.slice(-CARD_STREAM_CHARS);
    }
    this.text[stream] = all;
    this.view(stream).set(all, this.dropped[stream], 'start');
  }

  private view(stream: 'stdout' | 'stderr'): StreamView {
    return stream === 'stdout' ? this.stdout : this.stderr;
  }

  /** The call has ended; its result is on its way. */
  private finishing(): void {
    this.end();
    this.title.textContent = 'Finishing…';
    this.stop.hidden = true;
  }

  private stopRun(): void {
    const claim = this.claim;
    if (claim === undefined) return;
    this.stop.disabled = true;
    this.stop.textContent = 'Stopping…';
    this.callTool('stop', { claim }).then(
      (result) => {
        if (!result.stopping) {
          this.stop.hidden = true;
          this.message.textContent = 'The run had already ended.';
        }
      },
      (error: unknown) => {
        this.stop.disabled = false;
        this.stop.textContent = 'Stop';
        this.message.textContent = `Could not stop: ${reason(error)}`;
      },
    );
  }
}
