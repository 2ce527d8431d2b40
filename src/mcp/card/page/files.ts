/**
 * The run's saved files as chips (name, size, Open, Save to Workspace), the card's Open as
 * Notebook, and the line that says what the last of these did.
 */
import type { CardData, CardInputs } from '../contract';
import { reason, text } from './data';
import { button, el } from './dom';
import { bytes } from './format';
import type { CallTool } from './tools';

export class Actions {
  /** What the last action did, or why it could not. */
  readonly status = el('p', { class: 'message', role: 'status' });

  constructor(
    private readonly card: string,
    private readonly callTool: CallTool,
  ) {}

  button(label: string, action: CardInputs['action']['action'], name?: string): HTMLButtonElement {
    return button(label, (node) => this.run(node, { card: this.card, action, ...(name === undefined ? {} : { name }) }));
  }

  private run(node: HTMLButtonElement, args: CardInputs['action']): void {
    node.disabled = true;
    this.status.classList.remove('danger');
    this.status.textContent = '';
    this.callTool('action', args).then(
      (result) => {
        node.disabled = false;
        this.status.textContent = text(result.message);
        this.status.classList.toggle('danger', result.done !== true);
      },
      (error: unknown) => {
        node.disabled = false;
        this.status.textContent = reason(error);
        this.status.classList.add('danger');
      },
    );
  }
}

export function fileChips(files: CardData['files'], actions: Actions): HTMLElement {
  return el(
    'ul',
    { class: 'chips', 'aria-label': 'Files' },
    ...files.map((file) =>
      el(
        'li',
        { class: 'chip' },
        el('span', { class: 'name' }, file.name),
        el('span', { class: 'muted' }, bytes(file.size)),
        actions.button('Open', 'open', file.name),
        actions.button('Save to Workspace', 'save', file.name),
      ),
    ),
  );
}
