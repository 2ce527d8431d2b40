/**
 * A call being prepared, before it runs: the line chat shows, and VS Code's question the person
 * answers first when they turned confirmation on (another chat's state coming in, `startFrom`, is
 * asked by the window's host itself as the call begins, whatever VS Code's question was or was
 * approved away: windowHost.ts). The question says how many earlier programs run
 * again first, from the records, when the call goes back, starts from another chat, or finds no
 * sandbox holding the chat's state. Plain logic: the host's store, provider and settings come in
 * as parameters.
 */
import { networkOf, type Settings } from '../core/settings';
import { callsAfter, stateChain, type ChatRun, type SessionStates, type StartTokenReading, type StateRun } from '../core/state';
import type { SandboxProvider } from '../core/sandbox';
import { sessionDigest, sessionDisplayName } from '../core/session';
import type { ToolInput } from '../core/toolInput';
import { CONFIG_SECTION } from './ids';
import { confirmationText, goingBackOf, invocationMessage, type GoingBack, type InvocationFacts } from './invocationText';

export interface PrepareHost {
  settings: Settings;
  /** The image the sandbox runs now (a Dev Container build's tag), when known; else the setting's. */
  image: string | undefined;
  /** The sandbox image is being built now. */
  building: boolean;
  /** The run the person chose in the view for this chat (by its store digest) to go back to, if any. */
  personChose(chat: string): string | undefined;
  readToken(token: string): StartTokenReading;
  /** The view's label of a run (when it ran). */
  runLabel(origin: ChatRun): string;
  /** A chat's session runs (by its store digest), oldest first, as a resume reads them. */
  stateRuns(chat: string): Promise<StateRun[]>;
  /** Whether the chat's next call finds its state in a sandbox (the provider's word, without asking the engine). */
  holdsState(sessionKey: string): boolean;
}

export interface PreparedCall {
  message: string;
  /** The question (Markdown), when the person is asked first. */
  question?: string;
  /** The sandbox may be made now: the call runs unasked, so a made sandbox is used. */
  prewarm: boolean;
}

export async function prepareCall(rawInput: unknown, sessionKey: string, host: PrepareHost): Promise<PreparedCall> {
  const s = host.settings;
  const input = (rawInput ?? {}) as Partial<Record<keyof ToolInput, unknown>>;
  const session = s.state === 'session';
  const chat = sessionDigest(sessionKey);
  const chosen = session ? host.personChose(chat) : undefined;
  const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const facts: InvocationFacts = {
    code: typeof input.code === 'string' ? input.code : '',
    files: strings(input.files),
    outputs: s.outputsMode === 'declared' ? strings(input.outputs) : [],
    image: host.image ?? s.image,
    chat: sessionDisplayName(sessionKey),
    allowed: networkOf(s, CONFIG_SECTION).policy?.allow ?? [],
    building: host.building,
    ...goingBackOf(input, session, chosen !== undefined, (token) => {
      const reading = host.readToken(token);
      return 'origin' in reading ? { run: host.runLabel(reading.origin) } : reading;
    }),
  };
  // Another chat's state coming in is asked by the window's host itself, as the call begins
  // (windowHost.ts): VS Code's question can be approved away. Nothing is made for it meanwhile.
  if (!s.confirmBeforeRun) return { message: invocationMessage(facts), prewarm: input.startFrom === undefined };
  if (session) await countReplay(facts, input, sessionKey, chosen, host);
  return { message: invocationMessage(facts), question: confirmationText(facts), prewarm: false };
}

/**
 * How many earlier programs run again before this one, from the records (read only when the
 * person is asked). A chain that cannot be followed leaves the count out: such a call is refused,
 * or starts from an empty state, and says so to the model.
 */
async function countReplay(facts: InvocationFacts, input: { reset?: unknown; startFrom?: unknown }, sessionKey: string, chosen: string | undefined, host: PrepareHost): Promise<void> {
  const g = facts.goingBack;
  const chat = sessionDigest(sessionKey);
  try {
    if (g?.by === 'startFrom' && 'run' in g) {
      const reading = host.readToken(input.startFrom as string);
      if (!('origin' in reading)) return;
      const theirs = await host.stateRuns(reading.origin.chat);
      const at = theirs.findIndex((r) => r.runId === reading.origin.run);
      const runs = at < 0 ? undefined : kept(stateChain(theirs.slice(0, at + 1)));
      if (runs !== undefined) facts.goingBack = { ...g, runs };
      return;
    }
    if (g?.by === 'model' || (g?.by === 'person' && !('setAsideBy' in g))) {
      const chain = stateChain(await host.stateRuns(chat));
      const all = kept(chain);
      if (all === undefined) return;
      const back = g.by === 'model' ? g.calls : chosen ? callsAfter(chain, chosen) : undefined;
      const undone = typeof back === 'number' ? back : back && 'back' in back ? back.back : undefined;
      if (undone !== undefined && undone <= all) facts.goingBack = { ...g, runs: all - undone } as GoingBack;
      return;
    }
    if (g || input.reset === true || host.holdsState(sessionKey)) return;
    const runs = kept(stateChain(await host.stateRuns(chat)));
    if (runs) facts.rebuild = { runs };
  } catch {
    // The records could not be read: the question says what it knows without them.
  }
}

/**
 * Whether a chat's next call finds its state in a sandbox, from the provider's word (no engine
 * round trip) and the host's: a sandbox made and never given a state is rebuilt in at the call,
 * unless that was done or tried in it already. A sandbox removed behind the provider's back is
 * found gone only at the call, which then rebuilds without having said so here.
 */
export function holdsState(provider: Pick<SandboxProvider, 'sessionSandbox'>, states: Pick<SessionStates, 'triedIn'>): (sessionKey: string) => boolean {
  return (sessionKey) => {
    // A provider that cannot tell: the question claims no rebuild it does not know of.
    if (!provider.sessionSandbox) return true;
    const sandbox = provider.sessionSandbox(sessionKey);
    return sandbox !== undefined && (sandbox.mayHoldState || states.triedIn(sessionKey, sandbox.id));
  };
}

function kept(chain: ReturnType<typeof stateChain>): number | undefined {
  return chain.kind === 'ok' ? chain.runs.length : chain.kind === 'none' ? 0 : undefined;
}
