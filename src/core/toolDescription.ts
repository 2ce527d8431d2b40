/**
 * The execute_code tool as every host names and describes it to the model. package.json's
 * `languageModelTools` entry is checked against these by a unit test, so VS Code and the MCP
 * server cannot drift apart.
 */
export const TOOL_NAME = 'execute_code';

export const TOOL_TITLE = 'Execute Python in a sandbox';

export const TOOL_DESCRIPTION =
  'Run a short Python 3 program in an isolated sandbox and get back what it printed. Use it to compute instead of guessing: arithmetic, parsing, data analysis, statistics, checking an algorithm, simulating, making a chart. Contract: (1) Only printed output comes back: stdout, stderr when there is any, and the exit code when it is not 0; the value of the last expression is NOT returned, so print(...) everything you need. (2) Write a complete, self-contained program every time; no variables or imports carry over between calls, and each call runs in a fresh working directory. (3) There is no network access: nothing can be downloaded or installed (no pip install); use the standard library and what the sandbox image provides (the default image is an official python slim image: standard library only; try an import and report if it is missing). (4) Workspace files: list them in `files` (workspace-relative paths such as "data/sales.csv") and the program opens them under the same relative path; only files that exist in the workspace can be shared, and secrets such as .env files or keys are refused. (5) Files for the user: list the files your program will write in `outputs` (e.g. ["chart.png"]); they are saved for the user in the CodeAct Sandbox view and are not sent back to you as bytes (an image may be shown to you). If the user chose manifest mode, write outputs.json as {"files": ["chart.png"]} instead. (6) The program runs as an unprivileged user with limits on time, memory, CPU and processes; a program that runs too long is stopped and you are told. Long output is cut to its beginning and end, so print summaries rather than whole data sets.';
