/**
 * The host side of the run card's tests, bundled for the browser: the official MCP Apps host
 * (@modelcontextprotocol/ext-apps's AppBridge) with the card in a sandboxed srcdoc frame, as VS
 * Code shows it. The card's tool calls go to the test (window.cardTool, a Playwright binding).
 */
import { AppBridge, PostMessageTransport, type McpUiHostContext } from '@modelcontextprotocol/ext-apps/app-bridge';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

declare global {
  interface Window {
    cardTool(name: string, args: unknown): Promise<CallToolResult>;
    cardHost: typeof host;
  }
}

let bridge: AppBridge | undefined;
const sizes: number[] = [];

function connected(): AppBridge {
  if (!bridge) throw new Error('the card is not started');
  return bridge;
}

const host = {
  /** Frames the card and waits for its handshake (ui/initialize, then initialized). */
  async start(html: string, hostContext: McpUiHostContext): Promise<void> {
    document.body.dataset.theme = hostContext.theme ?? '';
    const iframe = document.createElement('iframe');
    iframe.setAttribute('sandbox', 'allow-scripts');
    iframe.title = 'Run card';
    document.body.append(iframe);
    bridge = new AppBridge(null, { name: 'card-test-host', version: '1.0.0' }, { serverTools: {} }, { hostContext });
    bridge.oncalltool = (params) => window.cardTool(params.name, params.arguments ?? {});
    bridge.onsizechange = ({ height }) => {
      if (height === undefined) return;
      sizes.push(height);
      iframe.style.height = `${height}px`;
    };
    const initialized = new Promise<void>((resolve) => (bridge!.oninitialized = () => resolve()));
    await bridge.connect(new PostMessageTransport(iframe.contentWindow!, iframe.contentWindow!));
    iframe.srcdoc = html;
    await initialized;
  },
  input: (args: Record<string, unknown>) => connected().sendToolInput({ arguments: args }),
  result: (result: CallToolResult) => connected().sendToolResult(result),
  cancelled: (reason: string) => connected().sendToolCancelled({ reason }),
  context: (context: McpUiHostContext) => {
    document.body.dataset.theme = context.theme ?? '';
    return connected().sendHostContextChange(context);
  },
  sizes: () => [...sizes],
};
window.cardHost = host;
