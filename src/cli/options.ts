/**
 * The command line's options, listed once: the table below is what `parse` accepts (through
 * node:util's parseArgs) and what the usage text shows.
 */
import { parseArgs } from 'node:util';
import { DEFAULTS } from '../core/limits';

export class UsageError extends Error {}

/**
 * The commands, named once: main.ts checks a name against them before it loads commands.ts, whose
 * table must have each. The last two are not in the usage: only `run` starts them (spareMaker.ts,
 * keeper.ts).
 */
export const COMMAND_NAMES = ['run', 'mcp', 'cleanup', 'prepare', 'export', '__make-spares', '__keep-session'] as const;
export type CommandName = (typeof COMMAND_NAMES)[number];

export function isCommandName(name: string): name is CommandName {
  return (COMMAND_NAMES as readonly string[]).includes(name);
}

interface Option {
  name: string;
  /** What the value is called in the usage; a flag without one takes no value. */
  value?: string;
  /** The usage's words, one string per line. */
  help: readonly string[];
}

interface Section {
  title: string;
  /** How many characters come before the help on each line (the widest option decides it). */
  column: number;
  options: readonly Option[];
}

const COMMANDS = `usage:
  codeact-sandbox run [options] PROGRAM.py|-      run a program, print what the model would get
  codeact-sandbox mcp [options]                   serve execute_code to an MCP client over stdio
  codeact-sandbox cleanup [--session KEY]         remove sandboxes kept by --session (and, without
                                                  it, the spares and those of MCP servers that are gone)
  codeact-sandbox prepare [--packages REQ]        build the default image (and the packages) and exit
  codeact-sandbox export --session KEY [--artifacts DIR] [--out FILE] [--kept-state-only]
                                                  a session's runs as a Jupyter notebook (.ipynb):
                                                  a --session KEY of run, or the start of an MCP
                                                  session's folder name (default DIR: the MCP
                                                  server's; without --out: to standard output;
                                                  --kept-state-only: only the runs whose state
                                                  the session went on from)
`;

const SECTIONS: readonly Section[] = [
  {
    title: 'run options (mcp takes them too, except --session, --keep-seconds, --file and --output):',
    column: 23,
    options: [
      { name: 'image', value: 'IMAGE', help: ['run exactly this image (default: the data image, built on first use)'] },
      { name: 'packages', value: 'REQ', help: ['a pip requirement added to the data image (repeatable; not with --image)'] },
      { name: 'session', value: 'KEY', help: ['keep the sandbox under this name and reuse it on the next run'] },
      {
        name: 'spares',
        value: 'N',
        help: [
          'with --session: sandboxes kept warm for the next new --session, shared',
          `by every run (default ${DEFAULTS.spareSandboxes}; 0: none; \`cleanup\` removes them)`,
        ],
      },
      {
        name: 'keep-seconds',
        value: 'N',
        help: [
          "with --session: a process of its own keeps the session's sandbox attached",
          'this long after a run and runs the next run of the same options in it',
          '(default 60; 0: none; `cleanup` ends it)',
        ],
      },
      { name: 'timeout', value: 'SECONDS', help: [`stop the program after this long (default ${DEFAULTS.timeoutSeconds})`] },
      { name: 'memory', value: 'MB', help: [`memory limit (default ${DEFAULTS.memoryMb})`] },
      { name: 'cpus', value: 'N', help: [`CPU limit (default ${DEFAULTS.cpus})`] },
      { name: 'pids', value: 'N', help: [`process limit (default ${DEFAULTS.pidsLimit})`] },
      { name: 'work-area', value: 'MB', help: [`size of the writable work area (default ${DEFAULTS.workAreaMb})`] },
      { name: 'output-budget', value: 'N', help: [`bytes of output shown (default ${DEFAULTS.outputBudgetBytes})`] },
      { name: 'workspace', value: 'DIR', help: ['the file store: --file names are looked up in its listing'] },
      { name: 'file', value: 'NAME', help: ["share a workspace file into the run's directory (repeatable)"] },
      { name: 'output', value: 'NAME', help: ['a file the program writes, to be saved (repeatable; declared mode)'] },
      { name: 'outputs', value: 'MODE', help: ['declared (default) or manifest (the program writes outputs.json)'] },
      { name: 'artifacts', value: 'DIR', help: ['where runs and saved files are kept (needed to save files)'] },
      {
        name: 'backend',
        value: 'B',
        help: ['docker (the --image), devcontainer (built from the --workspace\'s', '.devcontainer/devcontainer.json) or auto (devcontainer when it has one)'],
      },
      { name: 'rebuild', help: ['build the Dev Container image even when it is up to date'] },
      {
        name: 'runtime',
        value: 'NAME',
        help: ["container runtime: auto (default: gVisor's runsc when the engine has it,", "else the engine's default) or a runtime the engine must have (runsc, runc)"],
      },
      {
        name: 'state',
        value: 'MODE',
        help: [
          'fresh (default: a new Python process per run) or session (with --session:',
          'the variables, functions and imports a successful run leaves are there in',
          "the session's next run; a run that fails changes nothing)",
        ],
      },
      { name: 'reset', help: ['with --state session: run on an empty state'] },
      {
        name: 'allow-domain',
        value: 'D',
        help: ['a domain programs may reach through the sandbox\'s proxy (repeatable;', 'index.example.org, or *.example.org for the names under it); default: no network'],
      },
      { name: 'deny-domain', value: 'D', help: ['a domain refused even when --allow-domain matches it (repeatable)'] },
      {
        name: 'credentials',
        value: 'FILE',
        help: ['a JSON file of credential bindings (as the codeactSandbox.credentials', "setting): secrets the proxy adds on HTTPS to their hosts, never the program's"],
      },
      {
        name: 'secret',
        value: 'N=FILE',
        help: ['the value of the secret N, read from FILE (a path, or /dev/fd/3) as the', 'process starts; never give a value as an argument (repeatable)'],
      },
      { name: 'no-warm', help: ['start every program with docker exec (no warm runner in the sandbox)'] },
      {
        name: 'preload',
        value: 'MOD',
        help: ['a module the warm runner may preload (repeatable; default', `${DEFAULTS.preloadModules.join(', ')}; --preload '' for none)`],
      },
      {
        name: 'preload-when',
        value: 'W',
        help: ['used (default): once a program of the session imported it, before the next run;', 'start: before the first program'],
      },
      { name: 'verbose', help: ['log engine activity to stderr'] },
    ],
  },
  {
    title: 'mcp options:',
    column: 23,
    options: [
      { name: 'workspace', value: 'DIR', help: ["the file store (default: the client's roots, when it offers them)"] },
      { name: 'artifacts', value: 'DIR', help: ["where runs and saved files are kept (default: a folder of the user's cache)"] },
      { name: 'idle-minutes', value: 'N', help: [`remove the sandbox after this long idle (default ${DEFAULTS.idleMinutes}; 0: at disconnect)`] },
    ],
  },
  {
    title: `engine options (run, mcp and cleanup; default: DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH,
then DOCKER_CONTEXT, then the docker CLI's current context, then the local engine):`,
    column: 26,
    options: [
      { name: 'docker-host', value: 'URL', help: ['unix:///path, npipe:////./pipe/name, tcp://HOST:PORT, ssh://USER@HOST'] },
      { name: 'context', value: 'NAME', help: ['a docker CLI context (docker context ls); not with --docker-host'] },
      { name: 'docker-cert-path', value: 'DIR', help: ['folder with ca.pem, cert.pem, key.pem (TLS for tcp://)'] },
      { name: 'docker-tls-verify', help: ["verify the engine's certificate (on when --docker-cert-path is given)"] },
    ],
  },
];

/** Options that the commands' lines above describe rather than a section (export's, and --help). */
const UNLISTED: readonly Option[] = [
  { name: 'out', value: 'FILE', help: [] },
  { name: 'kept-state-only', help: [] },
  { name: 'help', help: [] },
];

function optionLines(section: Section): string {
  return section.options
    .map((o) => {
      const head = `  --${o.name}${o.value ? ` ${o.value}` : ''}`.padEnd(section.column);
      return [`${head}${o.help[0]}`, ...o.help.slice(1).map((line) => `${' '.repeat(section.column)}${line}`)].join('\n');
    })
    .join('\n');
}

export const USAGE = `${COMMANDS}\n${SECTIONS.map((s) => `${s.title}\n${optionLines(s)}\n`).join('\n')}`;

/** Every option once (a name in two sections means the same flag), as parseArgs takes them. */
const ALL = new Map<string, Option>([...SECTIONS.flatMap((s) => s.options), ...UNLISTED].map((o) => [o.name, o]));

export interface Parsed {
  command: string;
  /** Each option given, with every value it was given ('true' for a flag). */
  flags: Map<string, string[]>;
  positional: string[];
}

/**
 * Reads `argv` as `COMMAND [options] [PROGRAM]`. Unknown options and options without their
 * value are usage errors, said in the table's words.
 */
export function parse(argv: string[]): Parsed {
  const [command = 'help', ...rest] = argv;
  const options = Object.fromEntries([...ALL.values()].map((o) => [o.name, o.value ? { type: 'string' as const, multiple: true } : { type: 'boolean' as const }]));
  // Not strict: its tokens are judged here, against the table, so each error is said our way.
  const { tokens } = parseArgs({ args: rest, options, strict: false, allowPositionals: true, tokens: true });
  const flags = new Map<string, string[]>();
  const positional: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'positional') positional.push(token.value);
    else if (token.kind === 'option-terminator') continue;
    else {
      const option = ALL.get(token.name);
      if (!option) throw new UsageError(`unknown option ${token.rawName}`);
      if (!option.value) flags.set(token.name, ['true']);
      else if (token.value === undefined) throw new UsageError(`--${token.name} needs a value`);
      else flags.set(token.name, [...(flags.get(token.name) ?? []), token.value]);
    }
  }
  return { command, flags, positional };
}

/** `p`'s options as a command line again (the program left out), for a process a run starts. */
export function optionArgs(p: Parsed): string[] {
  return [...p.flags].flatMap(([name, values]) => (ALL.get(name)?.value ? values.map((v) => `--${name}=${v}`) : [`--${name}`]));
}

/** The provider's key of the CLI session --session `session` (its sandbox's name comes from it). */
export function cliSessionKey(session: string): string {
  return `cli:${session}`;
}

/** The options that name the engine some other way than the environment. */
export const ENGINE_OPTIONS = ['docker-host', 'context', 'docker-cert-path', 'docker-tls-verify'] as const;

/** The one value of an option that may be given once. */
export function one(p: Parsed, name: string): string | undefined {
  const v = p.flags.get(name);
  if (v && v.length > 1) throw new UsageError(`--${name} given more than once`);
  return v?.[0];
}

/** A numeric option within [min, max], or `fallback` when it is not given. */
export function number(p: Parsed, name: string, fallback: number, min: number, max: number): number {
  const raw = one(p, name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max) throw new UsageError(`--${name} must be a number from ${min} to ${max}`);
  return n;
}
