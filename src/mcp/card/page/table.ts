/**
 * A saved CSV/TSV file as a table: pages of rows from card_table, sorted by the column whose
 * header was clicked (ascending, then descending), with the total and whether the file was cut.
 */
import type { CardData, CardResults } from '../contract';
import { CARD_TABLE_PAGE } from '../names';
import { list, number, reason, text } from './data';
import { button, el } from './dom';
import { count, plural } from './format';
import type { CallTool } from './tools';

type Sort = { column: number; descending: boolean };

const NUMBER = /^[-+]?(\d[\d,]*(\.\d*)?|\.\d+)([eE][-+]?\d+)?%?$/;

export class TableView {
  readonly element: HTMLElement;
  private readonly total = el('span', { class: 'muted' }, 'Loading…');
  private readonly table = el('table');
  private readonly range = el('span', { class: 'range' });
  private readonly previous = button('Previous', () => this.load(Math.max(0, this.offset - CARD_TABLE_PAGE)), { disabled: '' });
  private readonly next = button('Next', () => this.load(this.offset + CARD_TABLE_PAGE), { disabled: '' });
  private readonly message = el('p', { class: 'message', role: 'status' });
  private offset = 0;
  private sort: Sort | undefined;
  private columns: string[] = [];
  private asked = 0;

  constructor(
    private readonly file: CardData['files'][number],
    private readonly card: string,
    private readonly callTool: CallTool,
  ) {
    this.element = el(
      'section',
      { class: 'table-file', 'aria-label': file.name },
      el('div', { class: 'table-title' }, el('span', { class: 'name' }, file.name), this.total),
      el('div', { class: 'table-scroll', role: 'region', 'aria-label': `Rows of ${file.name}`, tabindex: '0' }, this.table),
      el('div', { class: 'pager' }, this.previous, this.range, this.next),
      this.message,
    );
    this.load(0);
  }

  private load(offset: number): void {
    const asked = ++this.asked;
    this.element.setAttribute('aria-busy', 'true');
    const args = { card: this.card, name: this.file.name, offset, limit: CARD_TABLE_PAGE, ...(this.sort ? { sort: this.sort } : {}) };
    this.callTool('table', args).then(
      (page) => {
        // A slower answer to an earlier click is not shown over a later one's.
        if (asked === this.asked) this.show(page);
      },
      (error: unknown) => {
        if (asked !== this.asked) return;
        this.element.removeAttribute('aria-busy');
        this.message.textContent = `The table could not be read: ${reason(error)}`;
      },
    );
  }

  private show(page: CardResults['table']): void {
    this.element.removeAttribute('aria-busy');
    this.message.textContent = '';
    const rows = list(page.rows).map((row) => list(row).map(text));
    const total = number(page.total);
    this.offset = number(page.offset);
    this.columns = list(page.columns).map(text);
    this.total.textContent = plural(total, 'row') + (page.truncated === true ? ' · cut at the limit: the rows after these are not shown' : '');
    // Columns of numbers align right, as a spreadsheet shows them.
    const numeric = this.columns.map((_, column) => {
      const cells = rows.map((row) => row[column] ?? '').filter((cell) => cell !== '');
      return cells.length > 0 && cells.every((cell) => NUMBER.test(cell));
    });
    const body = el('tbody');
    for (const row of rows) body.append(el('tr', {}, ...row.map((cell, column) => el('td', { class: numeric[column] ? 'num' : undefined }, cell))));
    this.table.replaceChildren(el('thead', {}, el('tr', {}, ...this.columns.map((name, column) => this.header(name, column, numeric[column] === true)))), body);
    this.range.textContent = rows.length === 0 ? 'No rows' : `Rows ${count(this.offset + 1)}–${count(this.offset + rows.length)} of ${count(total)}`;
    this.previous.disabled = this.offset === 0;
    this.next.disabled = rows.length < CARD_TABLE_PAGE || this.offset + rows.length >= total;
  }

  private header(name: string, column: number, numeric: boolean): HTMLTableCellElement {
    const sorted = this.sort?.column === column ? this.sort : undefined;
    const arrow = sorted ? (sorted.descending ? ' ▼' : ' ▲') : '';
    const th = el('th', { scope: 'col', class: numeric ? 'num' : undefined, 'aria-sort': sorted ? (sorted.descending ? 'descending' : 'ascending') : undefined });
    th.append(
      button(name, () => {
        this.sort = { column, descending: sorted ? !sorted.descending : false };
        this.load(0);
      }, { title: `Sort by ${name}` }),
    );
    if (arrow) th.lastElementChild!.append(el('span', { 'aria-hidden': 'true' }, arrow));
    return th;
  }
}
