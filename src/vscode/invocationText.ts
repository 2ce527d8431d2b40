/**
 * What chat shows before a call runs: the line under the tool's name while it runs, and, when
 * the person is asked to confirm the run, the question. Both say what is true of this call (its
 * lines of code, the files it gets, the outputs it declares, the domains it may reach, an image
 * still being built, earlier programs run again first) and nothing else. Pure: built from the
 * call's input, the settings and what the host knows of the chat.
 *
 * Both are Markdown, and most of what they show was written by the model (the program, the names)
 * or comes from settings: each such text goes through core/markdown.ts, so it shows as exactly
 * itself and can neither end its code block nor hide a line in HTML or a link.
 */
import { codeBlock, hiddenInCode, inlineCode } from '../core/markdown';
import { duration, REPLAY_BUDGET_MS, START_TOKEN_LIFETIME } from '../core/state';

export interface InvocationFacts {
  code: string;
  files: readonly string[];
  outputs: readonly string[];
  /** The sandbox's image, as the settings or a Dev Container build name it; empty: the data image, whose tag is not known yet. */
  image: string;
  /** The chat the sandbox belongs to, for people ("chat 3f2a…"). */
  chat: string;
  /** Allowed domains; empty: no network. */
  allowed: readonly string[];
  /** The sandbox image is being built now, or this call starts its build (it is not on the engine): the call waits for it. */
  building: boolean;
  /** Session mode: the call first goes back to an earlier state (a new sandbox, earlier kept calls run again), or sets aside the person's choice to. */
  goingBack?: GoingBack;
  /**
   * Session mode: the chat has no sandbox holding its state now (it was removed, or the window
   * reopened), so its kept programs run again first to rebuild the state: how many.
   */
  rebuild?: { runs: number };
}

/** Why a `startFrom` is refused before anything runs: a token not made here, too old, used already, or session state off. */
export type StartRefusal = 'unknown' | 'expired' | 'used' | 'fresh';

/**
 * The model's `rewind`; the run the person chose in the view; that choice set aside by the
 * model's `reset` in this very call (the model did not know of it); or the other chat's state the
 * person's message handed over (`startFrom`). The model's `rewind` and `startFrom` set such a
 * choice aside too (`setsAside`). `runs`: how many earlier programs run again, when the records say.
 */
export type GoingBack =
  | { by: 'model'; calls: number; runs?: number; setsAside?: boolean }
  | { by: 'person'; runs?: number }
  | { by: 'person'; setAsideBy: 'reset' }
  /** `run`: when the run the token names ran (the view's label). */
  | { by: 'startFrom'; run: string; runs?: number; setsAside?: boolean }
  | { by: 'startFrom'; refused: StartRefusal };

/**
 * Whether the call goes back first, from its input as given (not yet checked) and whether the
 * person chose a run to go back to in this chat (session mode only). `startFromRun`: the label of
 * the run a token names, or why the token is refused.
 */
export function goingBackOf(
  input: { reset?: unknown; rewind?: unknown; startFrom?: unknown },
  sessionMode: boolean,
  personChose: boolean,
  startFromRun: (token: string) => { run: string } | { refused: Exclude<StartRefusal, 'fresh'> } = () => ({ refused: 'unknown' }),
): { goingBack?: GoingBack } {
  const rewind = typeof input.rewind === 'number' && Number.isInteger(input.rewind) && input.rewind > 0 ? input.rewind : undefined;
  const startFrom = typeof input.startFrom === 'string' && input.reset !== true && rewind === undefined;
  // Another chat's state coming in is named whatever else is pending: the person is asked about it.
  if (startFrom) {
    if (!sessionMode) return { goingBack: { by: 'startFrom', refused: 'fresh' } };
    const named = startFromRun(input.startFrom as string);
    if ('refused' in named) return { goingBack: { by: 'startFrom', refused: named.refused } };
    return { goingBack: { by: 'startFrom', run: named.run, ...(personChose ? { setsAside: true } : {}) } };
  }
  if (!sessionMode) return {};
  if (input.reset === true) return personChose ? { goingBack: { by: 'person', setAsideBy: 'reset' } } : {};
  if (rewind !== undefined) return { goingBack: { by: 'model', calls: rewind, ...(personChose ? { setsAside: true } : {}) } };
  return personChose ? { goingBack: { by: 'person' } } : {};
}

/** Longest a program's preview in the question: past it, the rest is counted. */
const PREVIEW_CHARS = 4000;
/** Names listed in a sentence before "and N more". */
const NAMES_LISTED = 5;
const AT_MOST = `for at most ${duration(REPLAY_BUDGET_MS)} in all`;

function lines(code: string): string {
  const n = code === '' ? 0 : code.replace(/\n$/, '').split('\n').length;
  return `${n} line${n === 1 ? '' : 's'}`;
}

function names(list: readonly string[]): string {
  const shown = list.slice(0, NAMES_LISTED).map(inlineCode);
  return list.length > NAMES_LISTED ? `${shown.join(', ')} and ${list.length - NAMES_LISTED} more` : shown.join(', ');
}

function where(f: InvocationFacts): string {
  return `sandbox ${f.image ? inlineCode(f.image) : '(the data image)'}, ${f.chat}`;
}

/**
 * The line chat shows under the tool's name while the call runs, and keeps after it ran: VS Code's
 * stable API has no past-tense line for a tool, so it is said in words true at both times.
 */
export function invocationMessage(f: InvocationFacts): string {
  const parts = [`${lines(f.code)} of Python in the ${where(f)}`];
  if (f.files.length) parts.push(`with ${names(f.files)}`);
  if (f.outputs.length) parts.push(`saving ${names(f.outputs)}`);
  const building = f.building ? ', after building the sandbox image on the engine (a few minutes, the first time only)' : '';
  const g = f.goingBack;
  const back = g && !('setAsideBy' in g) && !('refused' in g) ? `, after ${goingTo(g)}` : f.rebuild ? `, after rebuilding its state (${plural(f.rebuild.runs, 'program')} run again)` : '';
  return `${parts.join(', ')}${back}${building}`;
}

function goingTo(g: Exclude<GoingBack, { setAsideBy: string } | { refused: StartRefusal }>): string {
  if (g.by === 'startFrom') return `starting from another chat's state after its run of ${g.run}`;
  return `going back ${g.by === 'model' ? plural(g.calls, 'kept call') : 'to the run you chose'}`;
}

function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

/** What runs again first: `whose` earlier kept programs, how many when known, and the time they may take. */
function runAgain(whose: string, runs: number | undefined): string {
  if (runs === undefined) return `${whose} earlier kept calls run again`;
  if (runs === 0) return 'nothing runs again (that state is empty)';
  return `${whose} ${plural(runs, 'kept program')} run again (${AT_MOST})`;
}

const TODAY = 'with the workspace files as they are now and the allow-list of today';
const REFUSED: Record<StartRefusal, string> = {
  unknown: "with a token that is not one you offered from the CodeAct Sandbox view: the call is refused",
  expired: `with a token older than ${START_TOKEN_LIFETIME}: the call is refused`,
  used: 'with a token a chat has used already (a token starts one chat, once): the call is refused',
  fresh: 'which needs session state, and the state setting is fresh: the call is refused',
};
const SET_ASIDE = 'comes first, so the chat does not go back to the run you chose in the CodeAct Sandbox view (the model is told)';

/** What the question says of going back: a replay runs earlier programs again, with their files and domains. */
function goingBackText(g: GoingBack | undefined): string {
  if (!g) return '';
  if ('setAsideBy' in g) return ` The model's \`${g.setAsideBy}\` ${SET_ASIDE}.`;
  if (g.by === 'startFrom') {
    if ('refused' in g) return ` The model asks to start from another chat's state ${REFUSED[g.refused]}.`;
    const aside = g.setsAside ? ` The model's \`startFrom\` ${SET_ASIDE}.` : '';
    return ` First this chat starts from the state another chat had after its run of ${g.run}, which you chose in the CodeAct Sandbox view: in a new sandbox, ${runAgain("that chat's", g.runs)}, ${TODAY}.${aside}`;
  }
  const to = g.by === 'model' ? `back ${plural(g.calls, 'kept call')}` : 'back to the run you chose in the CodeAct Sandbox view';
  const aside = g.by === 'model' && g.setsAside ? ` The model's \`rewind\` ${SET_ASIDE}.` : '';
  return ` First the chat's state goes ${to}: in a new sandbox, ${runAgain('its', g.runs)}, ${TODAY}.${aside}`;
}

function rebuildText(r: InvocationFacts['rebuild']): string {
  if (!r) return '';
  return ` This chat has no sandbox holding its state now (it was removed, or the window reopened), so first the state is rebuilt: in a new sandbox, ${runAgain('its', r.runs)}, ${TODAY}.`;
}

function hiddenText(code: string): string {
  const hidden = hiddenInCode(code);
  if (hidden.length === 0) return '';
  return ` The program holds characters that are invisible or change the order text is shown in (${hidden.slice(0, NAMES_LISTED).join(', ')}${hidden.length > NAMES_LISTED ? ', ...' : ''}): what you see may not be what Python reads.`;
}

/** The question's text (Markdown), when the run is confirmed. */
export function confirmationText(f: InvocationFacts): string {
  const shared = f.files.length ? `It gets a copy of ${names(f.files)} from your workspace, and no other file of yours.` : 'It gets none of your files.';
  const saved = f.outputs.length ? ` It declares ${names(f.outputs)} as outputs, saved in the CodeAct Sandbox view.` : '';
  const network = f.allowed.length ? ` It may reach ${names(f.allowed)} through the recording proxy, and nothing else on the network.` : ' It has no network.';
  const cut = f.code.length > PREVIEW_CHARS;
  const preview = cut ? `${f.code.slice(0, PREVIEW_CHARS)}\n# ... (${f.code.length - PREVIEW_CHARS} more characters)` : f.code;
  // Said outside the block too: a line inside it is the program's to write.
  const shown = cut ? `; only its first ${PREVIEW_CHARS} of ${f.code.length} characters are shown below` : '';
  return `The program (${lines(f.code)}${shown}) runs in the ${where(f)}. ${shared}${saved}${network}${goingBackText(f.goingBack)}${rebuildText(f.rebuild)}${hiddenText(f.code)}\n\n${codeBlock(preview, 'python')}`;
}
