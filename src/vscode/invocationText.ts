/**
 * What chat shows before a call runs: the line under the tool's name while it runs, and, when
 * the person asked to confirm each run, the question. Both say what is true of this call (its
 * lines of code, the files it gets, the outputs it declares, the domains it may reach, an image
 * still being built) and nothing else. Pure: built from the call's input and the settings.
 */

export interface InvocationFacts {
  code: string;
  files: readonly string[];
  outputs: readonly string[];
  /** The sandbox's image, and the chat it belongs to ("chat 3f2a…"). */
  where: string;
  /** Allowed domains; empty: no network. */
  allowed: readonly string[];
  /** The sandbox image is being built now: the first call waits for it. */
  building: boolean;
  /** Session mode: the call first goes back to an earlier state (a new sandbox, earlier kept calls run again), or sets aside the person's choice to. */
  goingBack?: GoingBack;
}

/**
 * The model's `rewind`; the run the person chose in the view; that choice set aside by the
 * model's `reset`, `rewind` or `startFrom` in this very call (the model did not know of it); or
 * the other chat's state the person's message handed over (`startFrom`).
 */
export type GoingBack =
  | { by: 'model'; calls: number }
  | { by: 'person' }
  | { by: 'person'; setAsideBy: 'reset' | 'rewind' | 'startFrom' }
  /** `run`: when the run the token names ran (the view's label); undefined when it is not a token this store made now. */
  | { by: 'startFrom'; run?: string };

/**
 * Whether the call goes back first, from its input as given (not yet checked) and whether the
 * person chose a run to go back to in this chat (session mode only).
 */
export function goingBackOf(
  input: { reset?: unknown; rewind?: unknown; startFrom?: unknown },
  sessionMode: boolean,
  personChose: boolean,
  startFromRun: (token: string) => string | undefined = () => undefined,
): { goingBack?: GoingBack } {
  if (!sessionMode) return {};
  const rewind = typeof input.rewind === 'number' && Number.isInteger(input.rewind) && input.rewind > 0 ? input.rewind : undefined;
  const startFrom = typeof input.startFrom === 'string' && input.reset !== true && rewind === undefined;
  const setAsideBy = input.reset === true ? 'reset' : startFrom ? 'startFrom' : rewind !== undefined ? 'rewind' : undefined;
  if (personChose) return { goingBack: setAsideBy ? { by: 'person', setAsideBy } : { by: 'person' } };
  if (startFrom) {
    const run = startFromRun(input.startFrom as string);
    return { goingBack: run ? { by: 'startFrom', run } : { by: 'startFrom' } };
  }
  return rewind !== undefined && input.reset !== true ? { goingBack: { by: 'model', calls: rewind } } : {};
}

/** Longest a program's preview in the question: past it, the rest is counted. */
const PREVIEW_CHARS = 4000;
/** Names listed in a sentence before "and N more". */
const NAMES_LISTED = 5;

function lines(code: string): string {
  const n = code === '' ? 0 : code.replace(/\n$/, '').split('\n').length;
  return `${n} line${n === 1 ? '' : 's'}`;
}

function names(list: readonly string[]): string {
  const shown = list.slice(0, NAMES_LISTED).map((n) => `\`${n.replace(/`/g, "'")}\``);
  return list.length > NAMES_LISTED ? `${shown.join(', ')} and ${list.length - NAMES_LISTED} more` : shown.join(', ');
}

/** The line chat shows while the call runs. */
export function invocationMessage(f: InvocationFacts): string {
  const parts = [`Running ${lines(f.code)} of Python in the ${f.where}`];
  if (f.files.length) parts.push(`with ${names(f.files)}`);
  if (f.outputs.length) parts.push(`saving ${names(f.outputs)}`);
  const building = f.building ? ' (first, the sandbox image is built: a few minutes, once)' : '';
  const back = f.goingBack && !('setAsideBy' in f.goingBack) ? `, after ${goingTo(f.goingBack)}` : '';
  return `${parts.join(', ')}${back}${building}`;
}

function goingTo(g: Exclude<GoingBack, { setAsideBy: string }>): string {
  if (g.by === 'startFrom') return g.run ? `starting from another chat's state after its run of ${g.run}` : 'starting from a state that is not one you offered (refused)';
  return `going back ${g.by === 'model' ? plural(g.calls, 'kept call') : 'to the run you chose'}`;
}

function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

/** What the question says of going back: a replay runs earlier programs again, with their files and domains. */
function goingBackText(g: GoingBack | undefined): string {
  if (!g) return '';
  if ('setAsideBy' in g) return ` The model's \`${g.setAsideBy}\` comes first, so the chat does not go back to the run you chose in the CodeAct Sandbox view (the model is told).`;
  if (g.by === 'startFrom') {
    if (!g.run) return ' The model asks to start from another chat\'s state with a token that is not one you offered from the CodeAct Sandbox view (or is more than a day old): the call is refused.';
    return ` First this chat starts from the state another chat had after its run of ${g.run}, which you chose in the CodeAct Sandbox view: in a new sandbox, that chat's kept calls run again, with the workspace files as they are now and the allow-list of today.`;
  }
  const to = g.by === 'model' ? `back ${plural(g.calls, 'kept call')}` : 'back to the run you chose in the CodeAct Sandbox view';
  return ` First the chat's state goes ${to}: in a new sandbox, its earlier kept calls run again, with the workspace files as they are now and the allow-list of today.`;
}

/** The question's text (Markdown), when each run is confirmed. */
export function confirmationText(f: InvocationFacts): string {
  const shared = f.files.length ? `It gets a copy of ${names(f.files)} from your workspace, and no other file of yours.` : 'It gets none of your files.';
  const saved = f.outputs.length ? ` It declares ${names(f.outputs)} as outputs, saved in the CodeAct Sandbox view.` : '';
  const network = f.allowed.length ? ` It may reach ${names(f.allowed)} through the recording proxy, and nothing else on the network.` : ' It has no network.';
  const preview = f.code.length > PREVIEW_CHARS ? `${f.code.slice(0, PREVIEW_CHARS)}\n# ... (${f.code.length - PREVIEW_CHARS} more characters)` : f.code;
  return `The program (${lines(f.code)}) runs in the ${f.where}. ${shared}${saved}${network}${goingBackText(f.goingBack)}\n\n\`\`\`python\n${preview}\n\`\`\``;
}
