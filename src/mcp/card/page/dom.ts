// The page runs in a browser; the project's tsconfig is Node's, so the DOM's types come in here.
/// <reference lib="dom" />
/**
 * The only way the card makes elements. Whatever comes from a run (output, file names, hosts,
 * notes) becomes a text node: no markup is ever parsed from data, and no attribute that loads or
 * runs something (src, href, on*) can be set here; images get their data: URL in images.ts alone.
 */
export type Child = Node | string | null | undefined | false;

const FORBIDDEN_ATTRIBUTE = /^(on|src|href|srcdoc|action|formaction|style$|xlink)/i;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined) continue;
    if (FORBIDDEN_ATTRIBUTE.test(name)) throw new Error(`the card does not set ${name} from dom.ts`);
    node.setAttribute(name, value);
  }
  append(node, children);
  return node;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

export function button(label: string, onClick: (button: HTMLButtonElement) => void, attrs: Record<string, string | undefined> = {}): HTMLButtonElement {
  const node = el('button', { type: 'button', ...attrs }, label);
  node.addEventListener('click', () => onClick(node));
  return node;
}
