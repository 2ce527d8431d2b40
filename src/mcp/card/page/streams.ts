/** A run's printed output: stdout plain, stderr marked apart, each scrolling on its own. */
import { CARD_STREAM_CHARS } from '../names';
import { el } from './dom';
import { leftOut } from './format';

export type StreamName = 'stdout' | 'stderr';

const LABEL: Record<StreamName, string> = { stdout: 'Output', stderr: 'Error output' };

/** A stream's box; `set` replaces its text and keeps the view at the end if it was there. */
export class StreamView {
  readonly element: HTMLElement;
  private readonly pre: HTMLPreElement;
  private readonly note: HTMLElement;

  constructor(readonly name: StreamName) {
    // A region of its own: it scrolls, so a keyboard reaches it, and a screen reader names it.
    this.pre = el('pre', { class: `stream ${name}`, role: 'region', 'aria-label': LABEL[name], tabindex: '0' });
    this.note = el('p', { class: 'left-out' });
    this.element = el('div', { class: `stream-box ${name}`, hidden: '' }, this.pre, this.note);
  }

  /** Shows `text`, of which `omitted` characters were left out; past CARD_STREAM_CHARS the card leaves out more itself. */
  set(text: string, omitted: number, where: 'middle' | 'start'): void {
    let shown = text;
    let out = omitted;
    if (shown.length > CARD_STREAM_CHARS) {
      out += shown.length - CARD_STREAM_CHARS;
      shown = where === 'start' ? shown.slice(-CARD_STREAM_CHARS) : shown.slice(0, CARD_STREAM_CHARS / 2) + shown.slice(-CARD_STREAM_CHARS / 2);
    }
    const atEnd = this.pre.scrollTop + this.pre.clientHeight >= this.pre.scrollHeight - 4;
    this.pre.textContent = shown;
    if (atEnd) this.pre.scrollTop = this.pre.scrollHeight;
    this.note.textContent = out > 0 ? `${leftOut(out)}${where === 'start' ? ' (the start)' : ''}` : '';
    this.note.hidden = out === 0;
    this.element.hidden = shown === '' && out === 0;
  }
}
