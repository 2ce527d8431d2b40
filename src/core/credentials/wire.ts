/**
 * What the proxy is told for each binding: the header or query parameter to set, the texts to
 * redact from responses, and the stand-in to swap. Built from a value only on its way to the proxy
 * (its container's standard input), never kept, logged or put where a spec or label goes.
 */
import { randomBytes } from 'node:crypto';
import type { CredentialBinding } from './bindings';

/** Where a binding's values come from; the value of a secret is read only to start a proxy. */
export interface CredentialValues {
  /**
   * Changes whenever a value may have: part of the sandbox's settings, so a changed value gets a
   * new sandbox and proxy at the next call. Never derived from a value by a plain hash.
   */
  readonly generation: string;
  /** The value stored under `secret`, or undefined when none is. */
  read(secret: string): Promise<string | undefined>;
}

/** A sandbox's credentials: the bindings, their stand-ins, and where the values are read. */
export interface SandboxCredentials {
  bindings: readonly CredentialBinding[];
  /** Placeholder bindings' stand-ins, by the binding's placeholder variable. Not secret: the sandbox has them. */
  standIns: Readonly<Record<string, string>>;
  /** JSON shows only its generation: a spec or its key never holds a value. */
  values: CredentialValues;
}

/** A random stand-in for a placeholder binding: looks like a key to an SDK, means nothing anywhere. */
export function newStandIn(): string {
  return `codeact-stand-in-${randomBytes(18).toString('hex')}`;
}

/** Stand-ins for the bindings that ask for one, kept from `earlier` where it had one (a stable spec). */
export function standInsFor(bindings: readonly CredentialBinding[], earlier: Readonly<Record<string, string>> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const b of bindings) if (b.placeholder) out[b.placeholder] = earlier[b.placeholder] ?? newStandIn();
  return out;
}

/** One binding as the proxy's forwarder reads it (resources/proxy/credentials.py). */
export interface WireBinding {
  hosts: readonly string[];
  paths: readonly string[];
  methods: readonly string[];
  /** The header to set (every same-named header the program sent is removed first). */
  header?: [string, string];
  /** The query parameter to set, its value already encoded (every same-named one the program sent is removed first). */
  query?: [string, string];
  /** Texts a response must not carry back to the program: each is masked where it is seen. */
  redact: string[];
  standIn?: string;
  /** For the record: the secret's name (never its value). */
  secret: string;
}

/** The forwarder's view of `binding` with its `value`. */
export function wireBinding(binding: CredentialBinding, value: string, standIn: string | undefined): WireBinding {
  const base = { hosts: binding.hosts, paths: binding.paths, methods: binding.methods, secret: binding.secret, ...(standIn ? { standIn } : {}) };
  const s = binding.send;
  switch (s.as) {
    case 'bearer':
      return { ...base, header: ['Authorization', `Bearer ${value}`], redact: [value] };
    case 'basic': {
      const pair = s.user !== undefined ? `${s.user}:${value}` : value;
      const encoded = Buffer.from(pair, 'utf8').toString('base64');
      return { ...base, header: ['Authorization', `Basic ${encoded}`], redact: [value, encoded] };
    }
    case 'header':
      return { ...base, header: [s.name, `${s.prefix}${value}`], redact: [value] };
    case 'query': {
      // Sent as `strict` encodes it; masked in each form a server that echoes its URL may write it.
      const sent = strictPercent(value);
      return { ...base, query: [s.name, sent], redact: [...new Set([value, sent, sent.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()), encodeURIComponent(value), new URLSearchParams({ v: value }).toString().slice(2)])] };
    }
  }
}

/** Every byte of `value`'s UTF-8 as %XX but the unreserved characters (RFC 3986): how a query value is sent. */
export function strictPercent(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9._~-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Why a value cannot be sent, or undefined: a header or query value is one line of visible text. */
export function valueProblem(value: string): string | undefined {
  if (value.length === 0) return 'is empty';
  if (value.length > 8192) return 'is longer than 8192 characters';
  if (/[\x00-\x1f\x7f]/.test(value)) return 'has a line break or another control character';
  return undefined;
}
