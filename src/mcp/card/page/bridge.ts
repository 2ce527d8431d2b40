/**
 * The card's side of MCP Apps (spec 2026-01-26): JSON-RPC 2.0 with the host frame over
 * postMessage. Written here rather than taken from @modelcontextprotocol/ext-apps: that library's
 * App bundles to about 509 KB for the browser (esbuild --bundle --minify of `new App(...)`: the
 * MCP SDK's protocol layer and zod's schemas come with it), loaded again by every card in a chat,
 * while the card needs a handshake, three kinds of message and a size report. test/card/ runs this
 * page against the library's AppBridge as the host, so the two are proven to speak the same protocol.
 */
import { isObject } from './data';

export const PROTOCOL_VERSION = '2026-01-26';

/** What the host answers a request with when it refuses it (a JSON-RPC error). */
export class HostRefused extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

export interface BridgeEvents {
  /** A notification from the host (tool-input, tool-result, host-context-changed, ...). */
  notification(method: string, params: Record<string, unknown>): void;
  /** The host asked to tear the card down (`ui/resource-teardown`): stop asking it for anything. */
  teardown(): void;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export class Bridge {
  private next = 1;
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly events: BridgeEvents,
    private readonly host: Window = window.parent,
  ) {
    window.addEventListener('message', (event) => this.receive(event));
  }

  /** The handshake: the host's context (theme, style variables) once it answered. */
  async initialize(version: string): Promise<Record<string, unknown>> {
    const result = await this.request('ui/initialize', {
      protocolVersion: PROTOCOL_VERSION,
      appInfo: { name: 'codeact-sandbox-run-card', version },
      appCapabilities: {},
    });
    this.notify('ui/notifications/initialized', {});
    return isObject(result) && isObject(result.hostContext) ? result.hostContext : {};
  }

  request(method: string, params: Record<string, unknown>): Promise<unknown> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.post({ jsonrpc: '2.0', id, method, params });
    });
  }

  notify(method: string, params: Record<string, unknown>): void {
    this.post({ jsonrpc: '2.0', method, params });
  }

  private post(message: Record<string, unknown>): void {
    // The frame is sandboxed with an opaque origin and does not know the host's: '*' is what the
    // protocol uses. Only the parent receives it (a window's postMessage goes to that window).
    this.host.postMessage(message, '*');
  }

  private receive(event: MessageEvent): void {
    // Only the host frame speaks to the card; anything else (a frame the page never made) is ignored.
    if (event.source !== this.host) return;
    const message: unknown = event.data;
    if (!isObject(message) || message.jsonrpc !== '2.0') return;
    const { id, method } = message;
    if (typeof method === 'string') {
      const params = isObject(message.params) ? message.params : {};
      if (id === undefined || id === null) this.events.notification(method, params);
      else this.answer(id, method);
      return;
    }
    if (typeof id !== 'number') return;
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    const error = message.error;
    if (isObject(error)) {
      pending.reject(new HostRefused(typeof error.message === 'string' ? error.message : 'the host refused the request', Number(error.code)));
    } else {
      pending.resolve(message.result);
    }
  }

  /** The host's requests: the card has nothing to offer but a ping's answer and agreeing to go. */
  private answer(id: unknown, method: string): void {
    if (method === 'ping' || method === 'ui/resource-teardown') {
      if (method === 'ui/resource-teardown') this.events.teardown();
      this.post({ jsonrpc: '2.0', id, result: {} });
    } else {
      this.post({ jsonrpc: '2.0', id, error: { code: -32601, message: `the run card does not handle ${method}` } });
    }
  }
}

/**
 * Reports the document's height whenever it changes (ui/notifications/size-changed), measured as
 * the library's App does: at max-content, once per frame, so a host that sizes the frame to the
 * height it was told does not feed that height back.
 */
export function reportSize(bridge: Bridge): void {
  let last = -1;
  let queued = false;
  const measure = (): void => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      const root = document.documentElement;
      const was = root.style.height;
      root.style.height = 'max-content';
      const height = Math.ceil(root.getBoundingClientRect().height);
      root.style.height = was;
      if (height !== last) {
        last = height;
        bridge.notify('ui/notifications/size-changed', { height });
      }
    });
  };
  const observer = new ResizeObserver(measure);
  observer.observe(document.documentElement);
  observer.observe(document.body);
  measure();
}
