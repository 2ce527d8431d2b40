/**
 * The run card: an MCP App the host shows for each execute_code call. It shows the call while it
 * runs (tool-input, then card_live and card_poll), then its result (tool-result) with the images,
 * tables and files it saved. Bundled for the browser and inlined into one HTML page by esbuild.mjs.
 */
import { Bridge, reportSize } from './bridge';
import { isObject, reason, text } from './data';
import { el } from './dom';
import { LiveView } from './live';
import { renderResult } from './result';
import { applyHostContext } from './theme';
import { toolCaller } from './tools';

declare const __CODEACT_VERSION__: string | undefined;

const root = document.getElementById('card')!;
let live: LiveView | undefined;
let finished = false;

const bridge = new Bridge({
  notification(method, params) {
    switch (method) {
      case 'ui/notifications/tool-input':
        if (finished || live) return;
        live = new LiveView(isObject(params.arguments) ? params.arguments : {}, callTool);
        root.replaceChildren(live.element);
        return;
      case 'ui/notifications/tool-result':
        end();
        root.replaceChildren(renderResult(params, callTool));
        return;
      case 'ui/notifications/tool-cancelled':
        end();
        root.replaceChildren(
          el(
            'article',
            { class: 'card' },
            el('header', { class: 'head stopped' }, el('span', { class: 'dot', 'aria-hidden': 'true' }), el('h2', { class: 'title' }, 'Cancelled')),
            text(params.reason) ? el('p', { class: 'muted' }, text(params.reason)) : null,
          ),
        );
        return;
      case 'ui/notifications/host-context-changed':
        applyHostContext(params);
        return;
    }
  },
  teardown: end,
});
const callTool = toolCaller(bridge);

function end(): void {
  finished = true;
  live?.end();
}

root.replaceChildren(el('p', { class: 'muted' }, 'Starting…'));
reportSize(bridge);
bridge.initialize(typeof __CODEACT_VERSION__ === 'string' ? __CODEACT_VERSION__ : '0').then(applyHostContext, (error: unknown) => {
  root.replaceChildren(el('p', { class: 'muted' }, `The card could not reach its host: ${reason(error)}`));
});
