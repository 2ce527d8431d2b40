/**
 * The run card's names and limits, shared by the server and the card's page. No imports: the page
 * bundles this file for the browser.
 */
/** The card's resource: an MCP App (text/html;profile=mcp-app) the host renders in a sandboxed frame. */
export const CARD_URI = 'ui://codeact-sandbox/run-card';

/** Where a finished call's card data sits in its result's `_meta`. */
export const CARD_META_KEY = 'codeact-sandbox/card';

/** The app-only tools, by name. */
export const CARD_TOOL = {
  /** The call now running whose input is exactly `input` (the card got it as tool-input): its live view. */
  live: 'card_live',
  /** What the claimed call printed since `stdoutFrom`/`stderrFrom`, and whether it still runs. */
  poll: 'card_poll',
  /** Stops the claimed call (the person's Stop on the card). */
  stop: 'card_stop',
  /** A saved file's bytes (an image to show). */
  file: 'card_file',
  /** A page of a saved CSV/TSV file's rows, sorted by one column if asked. */
  table: 'card_table',
  /** Opens a saved file in VS Code, saves it into the workspace, or opens the chat's runs as a notebook. */
  action: 'card_action',
} as const;

/** Longest text of one stream the card data holds; the rest is counted (the whole is in the run's record). */
export const CARD_STREAM_CHARS = 64 * 1024;
/** Rows per page of a table, at most. */
export const CARD_TABLE_PAGE = 500;
/** Largest file the card may fetch whole (an image). */
export const CARD_FILE_BYTES = 8 * 1024 * 1024;

/** An MCP App's resource type (the MCP Apps extension's RESOURCE_MIME_TYPE; a unit test holds the two equal). */
export const CARD_MIME_TYPE = 'text/html;profile=mcp-app';
