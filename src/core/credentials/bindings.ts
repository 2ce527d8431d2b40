/**
 * Credentials the sandbox's proxy adds on the way out: a person binds a secret (by name; its value
 * lives in VS Code's SecretStorage or a file the person names) to hosts of the allow-list, and
 * optionally to paths and methods, and says how it is sent. A program never holds the value.
 * Here: what a binding is, and a person's written bindings checked. Bindings come from the
 * person's own settings or command line only, never from a workspace or the model's input.
 */
import { canonicalPattern, judge, patternProblem, parsePatterns, type DomainLists, type DomainPattern } from '../network';

/** How a credential is sent. */
export type CredentialSend =
  /** `Authorization: Bearer <value>`. */
  | { as: 'bearer' }
  /** `Authorization: Basic base64(user:value)`; without a user, the value is `user:password` itself. */
  | { as: 'basic'; user?: string }
  /** `<name>: <prefix><value>`. */
  | { as: 'header'; name: string; prefix: string }
  /** `?<name>=<value>` added to the request's query (any same-named parameter the program sent is removed). */
  | { as: 'query'; name: string };

export interface CredentialBinding {
  /** The secret's name: the key it is stored under, never its value. */
  secret: string;
  /** Canonical host patterns (`api.example.com`, `*.example.com`), sorted. */
  hosts: readonly string[];
  /** Path prefixes, segment-wise (`/v1` is `/v1` and `/v1/...`, not `/v10`); empty: every path. */
  paths: readonly string[];
  /** Upper-case methods; empty: every method. */
  methods: readonly string[];
  send: CredentialSend;
  /**
   * Placeholder mode: the environment variable a program gets a random stand-in in (for SDKs that
   * insist on a key); the proxy swaps it for the value on the bound hosts only.
   */
  placeholder?: string;
}

/** A binding as a person writes it (the setting, the command line's file): loose, checked by parseBindings. */
export interface WrittenBinding {
  secret?: unknown;
  hosts?: unknown;
  paths?: unknown;
  methods?: unknown;
  as?: unknown;
  name?: unknown;
  prefix?: unknown;
  user?: unknown;
  placeholder?: unknown;
}

/** A secret's name: what SecretStorage, `--secret NAME=FILE` and the record call it. */
export const SECRET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** An HTTP header or query parameter name (RFC 9110 token), not one the proxy must own. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
/** Headers that frame or route a request: binding one would let a credential reshape the request. */
const FRAMING_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'upgrade', 'te', 'trailer', 'keep-alive', 'proxy-connection', 'expect']);
const METHOD = /^[A-Z]{1,16}$/;
/** A path prefix: absolute, of a URL path's characters, no dot segment, no query or fragment. */
const PATH = /^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]{0,255}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** What a header prefix may hold: visible ASCII and spaces (no CR, LF or other control). */
const PREFIX = /^[\x20-\x7e]{0,64}$/;
/** What a basic-auth user may hold: visible ASCII without `:` (which ends the user). */
const BASIC_USER = /^[\x21-\x39\x3b-\x7e]{1,128}$/;

/** Environment variables a placeholder may never take: the sandbox's own, and those that change how programs run. */
const RESERVED_ENV = /^(HOME|TMPDIR|PATH|LANG|LC_.*|PYTHON.*|LD_.*|HTTPS?_PROXY|ALL_PROXY|NO_PROXY|https?_proxy|all_proxy|no_proxy|SSL_CERT_.*|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|PIP_.*|NODE_.*|GIT_.*|MPL.*)$/;

export interface ParsedBindings {
  bindings: CredentialBinding[];
  /** One sentence per binding dropped, naming where it came from. */
  problems: string[];
}

/** Bindings as a person wrote them, checked: a bad one is said and dropped, never widened. */
export function parseBindings(raw: readonly WrittenBinding[], setting: string): ParsedBindings {
  const bindings: CredentialBinding[] = [];
  const problems: string[] = [];
  const placeholders = new Set<string>();
  raw.forEach((w, i) => {
    const where = `${setting}[${i}]`;
    const result = parseOne(w);
    if (typeof result === 'string') {
      problems.push(`${where}: ${result}; it is ignored.`);
      return;
    }
    if (result.placeholder !== undefined) {
      if (placeholders.has(result.placeholder)) {
        problems.push(`${where}: the placeholder variable ${result.placeholder} is already another binding's; it is ignored.`);
        return;
      }
      placeholders.add(result.placeholder);
    }
    bindings.push(result);
  });
  return { bindings, problems };
}

function strings(value: unknown): string[] | undefined {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) return undefined;
  return value as string[];
}

function parseOne(w: WrittenBinding): CredentialBinding | string {
  if (typeof w !== 'object' || w === null) return 'is not an object';
  if (typeof w.secret !== 'string' || !SECRET_NAME.test(w.secret)) return 'needs "secret": the name of a stored secret (letters, digits, ".", "_", "-")';
  const hostsRaw = strings(w.hosts);
  if (!hostsRaw || hostsRaw.length === 0) return 'needs "hosts": the host patterns the credential is sent to';
  const bad = hostsRaw.find((h) => patternProblem(h) !== undefined);
  if (bad !== undefined) return `host ${JSON.stringify(bad)} ${patternProblem(bad)}`;
  const hosts = [...new Set(parsePatterns(hostsRaw, 'hosts').patterns.map(canonicalPattern))].sort();
  const paths = strings(w.paths);
  if (!paths) return '"paths" must be a list of path prefixes';
  const badPath = paths.find((p) => !PATH.test(p) || p.split('/').some((s) => s === '.' || s === '..' || /%2e|%2f|%5c/i.test(s)));
  if (badPath !== undefined) return `path ${JSON.stringify(badPath)} is not a path prefix (it starts with /, has no dot segment, query or encoded slash)`;
  const methodsRaw = strings(w.methods);
  if (!methodsRaw) return '"methods" must be a list of HTTP methods';
  const methods = [...new Set(methodsRaw.map((m) => m.toUpperCase()))].sort();
  const badMethod = methods.find((m) => !METHOD.test(m) || m === 'CONNECT');
  if (badMethod !== undefined) return `method ${JSON.stringify(badMethod)} is not an HTTP method a credential can go with`;
  const send = parseSend(w);
  if (typeof send === 'string') return send;
  let placeholder: string | undefined;
  if (w.placeholder !== undefined) {
    if (typeof w.placeholder !== 'string' || !ENV_NAME.test(w.placeholder)) return '"placeholder" must be an environment variable name';
    if (RESERVED_ENV.test(w.placeholder)) return `"placeholder" ${w.placeholder} is a variable the sandbox sets or needs`;
    placeholder = w.placeholder;
  }
  return { secret: w.secret, hosts, paths: [...new Set(paths)].sort(), methods, send, ...(placeholder ? { placeholder } : {}) };
}

function parseSend(w: WrittenBinding): CredentialSend | string {
  const as = w.as ?? 'bearer';
  if (as === 'bearer') return { as };
  if (as === 'basic') {
    if (w.user === undefined) return { as };
    if (typeof w.user !== 'string' || !BASIC_USER.test(w.user)) return '"user" must be a user name without ":" or spaces';
    return { as, user: w.user };
  }
  if (as === 'header' || as === 'query') {
    if (typeof w.name !== 'string' || !TOKEN.test(w.name)) return `"name" must name the ${as === 'header' ? 'header' : 'query parameter'}`;
    if (as === 'query') return { as, name: w.name };
    if (FRAMING_HEADERS.has(w.name.toLowerCase())) return `the header ${w.name} frames or routes the request; a credential cannot be sent in it`;
    const prefix = w.prefix ?? '';
    if (typeof prefix !== 'string' || !PREFIX.test(prefix)) return '"prefix" must be plain text without line breaks';
    return { as, name: w.name, prefix };
  }
  return '"as" must be bearer, basic, header or query';
}

/** Whether the allow- and deny-lists let a program reach every name `pattern` covers. */
function reachable(lists: Pick<DomainLists, 'allow' | 'deny'>, pattern: DomainPattern): boolean {
  // A name under the pattern stands for all of them: every allow pattern that covers it covers the rest.
  const probe = pattern.subdomains ? `codeact-probe.${pattern.domain}` : pattern.domain;
  const verdict = judge(lists, probe);
  if (!verdict.allowed) return false;
  if (pattern.subdomains && !verdict.by.subdomains) return false;
  if (pattern.subdomains && !(pattern.domain === verdict.by.domain || pattern.domain.endsWith(`.${verdict.by.domain}`))) return false;
  // No deny pattern may sit under a bound wildcard: the proxy would have to refuse part of it.
  return !lists.deny.some((d) => (pattern.subdomains ? d.domain.endsWith(`.${pattern.domain}`) : false));
}

/**
 * The bindings whose every host the lists let a program reach; the rest are said and dropped (a
 * binding never widens the allow-list: a credential goes only where the program may go anyway).
 */
export function reachableBindings(bindings: readonly CredentialBinding[], lists: Pick<DomainLists, 'allow' | 'deny'>, allowSetting: string): ParsedBindings {
  const kept: CredentialBinding[] = [];
  const problems: string[] = [];
  for (const b of bindings) {
    const patterns = parsePatterns(b.hosts, 'hosts').patterns;
    const out = patterns.find((p) => !reachable(lists, p));
    if (out) problems.push(`The credential binding for the secret ${b.secret} names ${canonicalPattern(out)}, which ${allowSetting} does not let programs reach (or a deny entry cuts into); the binding is ignored.`);
    else kept.push(b);
  }
  return { bindings: kept, problems };
}
