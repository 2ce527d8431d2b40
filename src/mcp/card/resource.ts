import type { ReadResourceResult, Resource } from '@modelcontextprotocol/sdk/types.js';
import { CARD_MIME_TYPE, CARD_URI } from './names';

/** The card as `resources/list` shows it. */
export function cardResourceListing(): Resource {
  return { uri: CARD_URI, name: 'run-card', title: 'CodeAct Sandbox run', description: "One execute_code run: its output, charts, tables and files.", mimeType: CARD_MIME_TYPE };
}

/**
 * The card's page, one self-contained HTML document (its script and style inline): it asks the
 * host for no origin at all (an empty content security policy list), so the frame the host
 * renders it in can make no network request.
 */
export function cardResource(html: string): ReadResourceResult {
  return { contents: [{ uri: CARD_URI, mimeType: CARD_MIME_TYPE, text: html, _meta: { ui: { csp: { connectDomains: [], resourceDomains: [] }, prefersBorder: false } } }] };
}
