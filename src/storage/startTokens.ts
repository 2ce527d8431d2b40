import * as fs from 'node:fs';
import * as path from 'node:path';
import { START_TOKEN_MS, type ChatRun, type StartTokenReading } from '../core/state';
import type { ToolCallOptions } from '../core/toolCall';
import type { ArtifactStore } from './artifactStore';
import type { StateSeal } from './stateSeal';
import { RUN_ID, SESSION_ID } from './storeIndex';

/**
 * The tokens the person hands a new chat to start from a run's state ("Start a New Chat from
 * Here"): made and checked by this store's key alone, so a model cannot name another chat's run by
 * guessing; good for minutes (START_TOKEN_MS); and good once. The chat that starts from a token
 * takes it, which the store records beside the runs (one file per token, made exclusively, so two
 * windows sharing the store cannot both take it); any later call, in any chat, is refused.
 */

const PURPOSE = 'start-from';
/** Where taken tokens are recorded: not a chat's name (storeIndex's SESSION_ID has no dot), so the listing passes it by. */
const TAKEN_DIR = '.start-tokens';

/** The token for starting a new chat from the state after `run` of `chat`, made at `now` (ms). */
export function startToken(seal: StateSeal, { chat, run }: ChatRun, now: number): string {
  const made = Math.floor(now / 1000).toString(36);
  return `${chat}.${run}.${made}.${seal.tag(PURPOSE, [chat, run, made])}`;
}

interface Parsed {
  origin: ChatRun;
  made: string;
  tag: string;
}

function parse(seal: StateSeal, token: string): Parsed | undefined {
  const parts = token.trim().split('.');
  if (parts.length !== 4) return undefined;
  const [chat, run, made, tag] = parts as [string, string, string, string];
  if (!SESSION_ID.test(chat) || !RUN_ID.test(run) || !/^[0-9a-z]{1,10}$/.test(made)) return undefined;
  if (!seal.checkTag(PURPOSE, [chat, run, made], tag)) return undefined;
  return { origin: { chat, run }, made, tag };
}

/** Whether a token made at `made` (base 36 seconds) is still good at `now`; one from the future (a clock set back since) is as good as one made now. */
function fresh(made: string, now: number): boolean {
  const age = now - parseInt(made, 36) * 1000;
  return age <= START_TOKEN_MS && age >= -START_TOKEN_MS;
}

function takenFile(root: string, { made, tag }: Parsed): string {
  return path.join(root, TAKEN_DIR, `${made}.${tag}`);
}

/** The chat (by digest) that took the token, if one did. Only a small regular file counts: never a link, never a FIFO waited on. */
function takenBy(file: string): string | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (e) {
    // Anything there but a file that is not there is taken: a token is refused rather than reused.
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : '';
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile() || stat.size > 64) return '';
    return fs.readFileSync(fd, 'utf8');
  } catch {
    return '';
  } finally {
    fs.closeSync(fd);
  }
}

/** What `token` names at `now`: the chat and run while it is good and no chat took it; else why not. */
export function readStartToken(seal: StateSeal, root: string, token: string, now: number): StartTokenReading {
  const parsed = parse(seal, token);
  if (!parsed) return { refused: 'unknown' };
  if (!fresh(parsed.made, now)) return { refused: 'expired' };
  const by = takenBy(takenFile(root, parsed));
  return by === undefined ? { origin: parsed.origin } : { refused: 'used', by };
}

/**
 * Takes a good token for `chat`: true for the first chat that takes it, false for every call
 * after (a token that is not good is never taken). Records of tokens past their time go as it does.
 */
export function takeStartToken(seal: StateSeal, root: string, token: string, chat: string, now: number): boolean {
  const parsed = parse(seal, token);
  if (!parsed || !fresh(parsed.made, now)) return false;
  const dir = path.join(root, TAKEN_DIR);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!fs.lstatSync(dir).isDirectory()) return false;
  try {
    // Exclusive: of two windows taking it at once, one makes the file and the other finds it.
    fs.writeFileSync(takenFile(root, parsed), chat, { flag: 'wx', mode: 0o600 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
  forgetStale(dir, now);
  return true;
}

/** Gives back a token `chat` took, when the chat did not start from it after all; another chat's take is left alone. */
export function giveBackStartToken(seal: StateSeal, root: string, token: string, chat: string): void {
  const parsed = parse(seal, token);
  if (!parsed) return;
  const file = takenFile(root, parsed);
  if (takenBy(file) === chat) fs.rmSync(file, { force: true });
}

/** A taken token past its time is refused as expired anyway: its record is no longer needed. */
function forgetStale(dir: string, now: number): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const made = /^([0-9a-z]{1,10})\.[0-9a-f]{20}$/.exec(name)?.[1];
    if (made && !fresh(made, now)) fs.rmSync(path.join(dir, name), { force: true });
  }
}

/** A host's other chats, as a call that starts from one's state reaches them: through its store's tokens and records. */
export function otherChats(store: ArtifactStore): NonNullable<ToolCallOptions['otherChats']> {
  return {
    readToken: (token) => store.readStartToken(token),
    takeToken: (token, chat) => store.takeStartToken(token, chat),
    giveBackToken: (token, chat) => store.giveBackStartToken(token, chat),
    runs: (chat) => store.stateRuns(chat),
  };
}
