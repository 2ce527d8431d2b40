/** The run's network record: each host it tried, allowed or refused and why, and the bytes. */
import type { CardData } from '../contract';
import { text } from './data';
import { el } from './dom';
import { bytes, count, plural } from './format';

export function networkRecord(network: NonNullable<CardData['network']>): HTMLElement {
  const connections = network.connections;
  const refused = connections.filter((c) => !c.allowed).length;
  const summary = `Network: ${plural(connections.length + network.omitted, 'connection')}` + (refused > 0 ? ` · ${count(refused)} refused` : '');
  const rows = connections.map((c) =>
    el(
      'tr',
      { class: c.allowed ? undefined : 'refused' },
      el('td', {}, text(c.host)),
      el('td', { class: 'num' }, String(c.port)),
      el('td', {}, (c.allowed ? 'allowed' : `refused${c.reason ? ` (${text(c.reason)})` : ''}`) + (c.open ? ' · open' : '')),
      el('td', { class: 'num' }, bytes(c.bytesOut)),
      el('td', { class: 'num' }, bytes(c.bytesIn)),
      el('td', { class: 'num' }, count(c.count ?? 1)),
    ),
  );
  const head = ['Host', 'Port', 'Result', 'Sent', 'Received', 'Times'].map((h, i) => el('th', { scope: 'col', class: i === 0 || i === 2 ? undefined : 'num' }, h));
  return el(
    'details',
    { class: 'network', open: refused > 0 ? '' : undefined },
    el('summary', {}, summary),
    el('div', { class: 'table-scroll' }, el('table', {}, el('thead', {}, el('tr', {}, ...head)), el('tbody', {}, ...rows))),
    network.omitted > 0 ? el('p', { class: 'muted' }, `${plural(network.omitted, 'more connection')} not listed.`) : null,
  );
}
