// Shared by the host suites: they run inside the real extension host, against the real engine.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const vscode = require('vscode');

const EXTENSION_ID = 'codeact-sandbox.codeact-sandbox';
const IMAGE = process.env.CODEACT_TEST_IMAGE || 'codeact-sandbox/python:bookworm';
const ALT_IMAGE = `${IMAGE}-alt`;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function docker(...args) {
  return execFileSync('docker', args, { encoding: 'utf8' }).trim();
}

/** Containers this extension host owns, by the labels every sandbox carries: "ID IMAGE" lines. */
function ownContainers() {
  return containerLines('{{.ID}} {{.Image}}');
}

/** The ids of this extension host's spare sandboxes (session label "spare": no chat has taken them). */
function spareContainers() {
  return containerLines('{{.ID}} {{.Label "dev.codeact-sandbox.session"}}')
    .filter((line) => line.endsWith(' spare'))
    .map((line) => line.split(' ')[0]);
}

function containerLines(format) {
  const out = docker('ps', '-a', '--filter', 'label=dev.codeact-sandbox.owner-kind=vscode',
    '--filter', `label=dev.codeact-sandbox.owner-pid=${process.pid}`, '--format', format);
  return out ? out.split('\n') : [];
}

async function activate() {
  const ext = vscode.extensions.getExtension(EXTENSION_ID);
  if (!ext) throw new Error(`${EXTENSION_ID} is not loaded`);
  return ext.activate();
}

function textOf(result) {
  return result.content.filter((p) => p instanceof vscode.LanguageModelTextPart).map((p) => p.value).join('');
}

async function run(code, { token, cancellation } = {}) {
  const result = await vscode.lm.invokeTool('execute_code', { input: { code }, toolInvocationToken: token }, cancellation);
  return textOf(result);
}

async function setting(key, value) {
  await vscode.workspace.getConfiguration('codeactSandbox').update(key, value, vscode.ConfigurationTarget.Global);
}

async function waitFor(fn, ms, what) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** Asks the runner for a screenshot (kept as a test artifact). */
async function snapshot(name) {
  console.log(`CODEACT_HOST_SNAPSHOT ${name}`);
  await sleep(1500);
}

let queries = 0;
/**
 * The elements matching `selector` in every frame of the page whose document has `frameHas` (a
 * chat's run card is a webview: frames within frames), as the runner reads them from the browser.
 */
async function query(selector, frameHas, reveal = false) {
  const id = `q${process.pid}-${++queries}`;
  const file = path.join(process.env.CODEACT_HOST_ARTIFACTS || '', `query-${id}.json`);
  console.log(`CODEACT_HOST_QUERY ${id} ${JSON.stringify({ selector, ...(frameHas ? { frameHas } : {}), ...(reveal ? { reveal } : {}) })}`);
  const text = await waitFor(() => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined), 20000, `the page's answer to ${selector}`);
  fs.rmSync(file, { force: true });
  return JSON.parse(text);
}

/**
 * How many processes run in the sandbox besides its PID 1 and this count itself: a running program
 * and whatever it started. Read from /proc inside (docker top shows other command lines under gVisor);
 * 0 also when the container is gone.
 */
/** Counts a sandbox's program processes (test/fixtures/program-processes.py says which count). */
const PROGRAM_PROCESSES = fs.readFileSync(path.join(__dirname, '../../fixtures/program-processes.py'), 'utf8');

function programProcesses(containerId) {
  const count = PROGRAM_PROCESSES;
  try {
    return Number(docker('exec', containerId, 'python3', '-c', count).trim());
  } catch {
    return 0;
  }
}

module.exports = { EXTENSION_ID, IMAGE, ALT_IMAGE, sleep, docker, ownContainers, spareContainers, activate, textOf, run, setting, waitFor, snapshot, query, programProcesses };
