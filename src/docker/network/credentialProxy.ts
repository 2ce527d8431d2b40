/**
 * A sandbox's credentials on their way to its proxy: read from where the person keeps them only
 * now, written once to the proxy container's standard input (the attach stream, which the engine
 * neither logs nor shows in an inspect), and held from then on by the credential forwarder alone
 * (resources/proxy/credentials.py). Never an environment variable, argument, file, label or log
 * line. What comes back is public: the sandbox's CA certificate, which its programs trust.
 */
import type { Duplex } from 'node:stream';
import { followProxyLog } from './proxyLog';
import type Dockerode from 'dockerode';
import { ToolError } from '../../core/errors';
import { valueProblem, wireBinding, type SandboxCredentials, type WireBinding } from '../../core/credentials';
import { ENGINE_DEADLINE_MS, withDeadline } from '../engine';
import type { SandboxNetwork } from '../container';
import { NetworkUnavailableError } from './errors';
import { NEVER_REACHED } from './squidConfig';

/** The forwarder's first line on stderr once it listens: the CA's certificate, base64. */
const CA_LINE = 'codeact-credentials ca ';
const STOPPED_LINE = 'codeact-credentials: ';
const FORWARDER_READY_MS = 60_000;

/** A credential the person bound but never stored (or cannot be sent): the sandbox is not made, and the person is told which. */
export class MissingSecretError extends ToolError {
  constructor(readonly secret: string, why: string) {
    super(
      'sandbox_failed',
      `The secret ${secret}, which a credential binding names, ${why}, so the sandbox was not made and the program was not run. Ask the user to store it (CodeAct Sandbox: Add Credential, or --secret ${secret}=FILE) or to remove the binding; do not ask for the secret itself.`,
    );
    this.name = 'MissingSecretError';
  }
}

/** Every bound host pattern, sorted: what the leaf is signed for and squid sends to the forwarder. */
export function boundHosts(credentials: SandboxCredentials): string[] {
  return [...new Set(credentials.bindings.flatMap((b) => b.hosts))].sort();
}

/**
 * The headers squid looks for a stand-in in on plain HTTP, beside the URL and each binding's own:
 * where SDKs and people put keys. squid can only match a header by its name, so a stand-in in a
 * header of another name passes there (docs/credentials.md says so).
 */
const KEY_HEADERS = ['Authorization', 'Proxy-Authorization', 'Cookie', 'X-Api-Key', 'Api-Key', 'X-Auth-Token', 'X-Access-Token', 'X-Goog-Api-Key', 'Ocp-Apim-Subscription-Key', 'X-Functions-Key'];

/** What squid's configuration needs of the credentials (no value). */
export function squidCredentials(credentials: SandboxCredentials, port: number): { hosts: string[]; standIns: string[]; headers: string[]; port: number } {
  const placeholders = credentials.bindings.filter((b) => b.placeholder);
  const headers = new Map<string, string>();
  if (placeholders.length) {
    for (const h of [...placeholders.map((b) => (b.send.as === 'header' ? b.send.name : 'Authorization')), ...KEY_HEADERS]) if (!headers.has(h.toLowerCase())) headers.set(h.toLowerCase(), h);
  }
  return { hosts: boundHosts(credentials), standIns: Object.values(credentials.standIns), headers: [...headers.values()], port };
}

/** The forwarder's input, values read now; throws MissingSecretError for a secret not stored or not sendable. */
async function forwarderInput(network: SandboxNetwork & { credentials: SandboxCredentials }): Promise<string> {
  const bindings: WireBinding[] = [];
  for (const b of network.credentials.bindings) {
    const value = await network.credentials.values.read(b.secret);
    if (value === undefined) throw new MissingSecretError(b.secret, 'is bound but not stored');
    const problem = valueProblem(value);
    if (problem) throw new MissingSecretError(b.secret, problem);
    bindings.push(wireBinding(b, value, b.placeholder ? network.credentials.standIns[b.placeholder] : undefined));
  }
  const testing = network.testing;
  return JSON.stringify({
    bindings,
    never: NEVER_REACHED.filter((r) => !r.includes(':')),
    ...(testing ? { reachable: testing.reachable, hosts: testing.hosts, ...(testing.upstreamCa ? { upstreamCa: testing.upstreamCa } : {}) } : {}),
  });
}

/**
 * Attaches to the created proxy's standard input before it starts; `deliver` then writes the
 * forwarder's input and closes it. The values are read before the attach, so a secret that is
 * missing stops the sandbox before anything runs.
 */
export async function attachCredentials(container: Dockerode.Container, network: SandboxNetwork & { credentials: SandboxCredentials }): Promise<{ deliver(): Promise<void>; abandon(): void }> {
  let input: string | undefined = await forwarderInput(network);
  const stream = (await withDeadline(container.attach({ stream: true, stdin: true, stdout: false, stderr: false, hijack: true }), ENGINE_DEADLINE_MS, 'attach to the proxy')) as Duplex;
  stream.on('error', () => {});
  return {
    async deliver() {
      // A line of its own: Podman passes the attach request's body to the container's input before it.
      const text = `\ncodeact-credentials ${Buffer.from(input!, 'utf8').toString('base64')}\n`;
      input = undefined;
      await new Promise<void>((resolve, reject) => stream.write(text, (e) => (e ? reject(e) : resolve())));
      stream.end();
    },
    abandon() {
      input = undefined;
      stream.destroy();
    },
  };
}

/** The sandbox's CA as the forwarder printed it once it listened; rejects if it stopped first. */
export async function forwarderCa(docker: Dockerode, container: Dockerode.Container, name: string): Promise<string> {
  const pem = await followProxyLog(docker, container, {
    stdout: false,
    stderr: true,
    deadlineMs: FORWARDER_READY_MS,
    what: 'wait for the credential forwarder',
    onLine: (line) => {
      if (line.startsWith(CA_LINE)) return Buffer.from(line.slice(CA_LINE.length), 'base64').toString('utf8');
      if (line.startsWith(STOPPED_LINE)) throw new NetworkUnavailableError(`the credential forwarder of ${name} ${line.slice(STOPPED_LINE.length)}`);
      return undefined;
    },
    atEnd: () => new NetworkUnavailableError(`the proxy ${name} stopped before its credential forwarder was ready`),
  });
  if (!/^-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+-----END CERTIFICATE-----\n?$/.test(pem)) throw new NetworkUnavailableError(`the credential forwarder of ${name} gave no certificate`);
  return pem;
}
