export { buildNotebook, notebookRuns, leftOutWhenKeptOnly, failure, cellId, INLINE_IMAGE_MAX_BYTES, INLINE_TOTAL_MAX_BYTES, RAISES_TAG, NOT_KEPT_TAG } from './build';
export type { FileContent, NotebookInput, NotebookOptions } from './build';
export type { Notebook, Output, CodeCell, MarkdownCell } from './nbformat';
export { sessionNotebook, sessionRuns, notebookText, NoRunsError } from './fromStore';
export type { SessionNotebookOptions } from './fromStore';
export { isSvg, svgImageHtml } from './svg';
