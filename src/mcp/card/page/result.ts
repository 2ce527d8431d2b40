/**
 * A finished call's card, from the card data in its result's _meta (contract.ts); a result without
 * it (an error before the run, another host's result) is shown as its text.
 */
import type { CardData } from '../contract';
import { CARD_META_KEY } from '../names';
import { contentText, isObject, list, number, text } from './data';
import { el, type Child } from './dom';
import { Actions, fileChips } from './files';
import { statusLine, plural } from './format';
import { imageFigure, imageOf } from './images';
import { networkRecord } from './network';
import { StreamView } from './streams';
import { TableView } from './table';
import type { CallTool } from './tools';

/** Inline images and tables a card shows at most; the others keep their chip. */
const MAX_IMAGES = 12;
const MAX_TABLES = 4;

export function renderResult(result: Record<string, unknown>, callTool: CallTool): HTMLElement {
  const meta = isObject(result._meta) ? result._meta[CARD_META_KEY] : undefined;
  return isObject(meta) && meta.v === 1 && typeof meta.card === 'string' ? renderCard(meta as CardData, callTool) : renderText(result);
}

function head(status: string, title: string, ...rest: Child[]): HTMLElement {
  return el('header', { class: `head ${status}` }, el('span', { class: 'dot', 'aria-hidden': 'true' }), el('h2', { class: 'title' }, title), ...rest);
}

function streams(stdout: string, stdoutOmitted: number, stderr: string, stderrOmitted: number): HTMLElement {
  const out = new StreamView('stdout');
  const err = new StreamView('stderr');
  out.set(stdout, stdoutOmitted, 'middle');
  err.set(stderr, stderrOmitted, 'middle');
  const none = stdout === '' && stderr === '' && stdoutOmitted === 0 && stderrOmitted === 0;
  return el('div', { class: 'streams' }, out.element, err.element, none ? el('p', { class: 'muted' }, 'No output.') : null);
}

function renderCard(data: CardData, callTool: CallTool): HTMLElement {
  const files = list(data.files).filter(isObject) as CardData['files'];
  const notSaved = list(data.notSaved).filter(isObject) as CardData['notSaved'];
  const notes = list(data.notes).map(text).filter((n) => n !== '');
  const actions = new Actions(data.card, callTool);
  const images = files.filter((f) => f.kind === 'image');
  const tables = files.filter((f) => f.kind === 'table');
  const where = [text(data.image), text(data.chat)].filter((s) => s !== '').join(' · ');
  const shown = (n: number, max: number, what: string): Child =>
    n > max ? el('p', { class: 'muted' }, `${plural(n - max, `more ${what}`)} not shown here: each has its chip below.`) : null;
  return el(
    'article',
    { class: 'card' },
    head(
      text(data.status),
      statusLine({ status: data.status, exitCode: typeof data.exitCode === 'number' ? data.exitCode : null, durationMs: number(data.durationMs) }),
      where ? el('span', { class: 'where muted', title: text(data.startedAt) }, where) : null,
      actions.button('Open as Notebook', 'notebook'),
    ),
    streams(text(data.stdout), number(data.stdoutOmitted), text(data.stderr), number(data.stderrOmitted)),
    images.length ? el('div', { class: 'images' }, ...images.slice(0, MAX_IMAGES).map((f) => imageFigure(f, data.card, callTool))) : null,
    shown(images.length, MAX_IMAGES, 'image'),
    ...tables.slice(0, MAX_TABLES).map((f) => new TableView(f, data.card, callTool).element),
    shown(tables.length, MAX_TABLES, 'table'),
    files.length ? fileChips(files, actions) : null,
    notSaved.length
      ? el(
          'section',
          { class: 'not-saved' },
          el('h3', {}, 'Declared but not saved'),
          el('ul', {}, ...notSaved.map((n) => el('li', {}, el('span', { class: 'name' }, text(n.name)), ` — ${text(n.reason)}`))),
        )
      : null,
    isObject(data.network) && Array.isArray(data.network.connections) ? networkRecord(data.network) : null,
    notes.length ? el('div', { class: 'notes' }, ...notes.map((n) => el('p', {}, n))) : null,
    actions.status,
  );
}

/** A result without card data: its text as text, and any images it carries. */
function renderText(result: Record<string, unknown>): HTMLElement {
  const failed = result.isError === true;
  const out = new StreamView(failed ? 'stderr' : 'stdout');
  out.set(contentText(result), 0, 'middle');
  const images = list(result.content)
    .filter((b): b is Record<string, unknown> => isObject(b) && b.type === 'image')
    .map((b, i) => imageOf(text(b.mimeType), text(b.data), `Image ${i + 1}`))
    .filter((img): img is HTMLImageElement => img !== undefined)
    .map((img) => el('figure', { class: 'image' }, img));
  return el(
    'article',
    { class: 'card' },
    head(failed ? 'failed' : 'ok', failed ? 'Failed' : 'Finished'),
    el('div', { class: 'streams' }, out.element),
    images.length ? el('div', { class: 'images' }, ...images) : null,
  );
}
