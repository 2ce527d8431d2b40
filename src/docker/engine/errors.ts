import type Dockerode from 'dockerode';
import { ToolError } from '../../core/errors';
import { engineOf, type EngineTarget } from './connection';
import { engineTimeoutOf } from './deadline';
import { knownIdentity, type EngineIdentity } from './identity';

export { ENGINE_DEADLINE_MS, EngineTimeoutError, readEngine, withDeadline } from './deadline';

const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOENT',
  'EACCES',
  'EPERM',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Node's and OpenSSL's names for a TLS handshake or certificate failure. */
const TLS_CODE = /^(ERR_SSL_|ERR_TLS_|ERR_OSSL_|UNABLE_TO_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|HOSTNAME_MISMATCH$|EPROTO$)/;
const TLS_MESSAGE = /certificate|ssl3?_|tlsv1|ssl routines|alert (bad|unknown|handshake)|wrong version number/i;

/** The error and its causes, outermost first. */
function chain(e: unknown): { code?: unknown; message?: unknown; level?: unknown; statusCode?: unknown }[] {
  const out: { code?: unknown; message?: unknown; level?: unknown }[] = [];
  let current: unknown = e;
  for (let i = 0; i < 5 && current !== null && typeof current === 'object'; i++) {
    out.push(current as { code?: unknown; message?: unknown });
    current = (current as { cause?: unknown }).cause;
  }
  return out;
}

export type TransportFailure =
  /** The engine's or our certificate was not accepted. */
  | 'tls_certificate'
  /** TLS on one side only: a TLS client talking to a plain endpoint, or the reverse. */
  | 'tls_mismatch'
  /** The SSH host key is unknown or differs from known_hosts. */
  | 'ssh_host_key'
  /** The SSH server accepted none of our keys. */
  | 'ssh_auth'
  /** Any other SSH-level failure (timeout, the remote has no docker CLI, ...). */
  | 'ssh';

/** What kind of transport failure this is, when it is one of the TLS or SSH kinds. */
export function transportFailure(e: unknown): TransportFailure | undefined {
  for (const link of chain(e)) {
    const code = typeof link.code === 'string' ? link.code : '';
    const message = typeof link.message === 'string' ? link.message : '';
    if (/HTTP request to an HTTPS server/i.test(message) || /wrong version number|ERR_SSL_WRONG_VERSION_NUMBER|packet length too long/i.test(`${code} ${message}`)) {
      return 'tls_mismatch';
    }
    if (TLS_CODE.test(code) || (code === '' && TLS_MESSAGE.test(message))) return 'tls_certificate';
    if ((typeof link.level === 'string' && link.level.startsWith('client-')) || link.level === 'handshake' || link.level === 'protocol') {
      if (/host denied|verification failed/i.test(message)) return 'ssh_host_key';
      if (link.level === 'client-authentication') return 'ssh_auth';
      return 'ssh';
    }
  }
  return undefined;
}

/** The socket refused this user: EACCES or EPERM anywhere in the error's chain. */
function permissionDenied(e: unknown): boolean {
  return chain(e).some((l) => l.code === 'EACCES' || l.code === 'EPERM');
}

/** True when the error says the engine could not be talked to at all (as opposed to refusing a request or being slow). */
export function isUnreachable(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return true;
  return transportFailure(e) !== undefined;
}

/** The engine is not there or did not answer in time: the call fails with engineFailure's sentence. */
export function isEngineFailure(e: unknown): boolean {
  return isUnreachable(e) || engineTimeoutOf(e) !== undefined;
}

/**
 * The model-facing error for an engine that cannot be used right now, told apart by what happened:
 * it did not answer in time (busy: say so, and what it was asked), or nothing answers at its
 * address (engineUnreachable). Named as the engine named itself when it has answered this process
 * before (Podman is never called Docker).
 */
export function engineFailure(cause: unknown, docker?: Dockerode): ToolError {
  const target = docker ? engineOf(docker) : undefined;
  const identity = docker ? knownIdentity(docker) : undefined;
  const timeout = engineTimeoutOf(cause);
  if (timeout) {
    const seconds = Math.round(timeout.ms / 1000);
    const name = engineName(target, identity);
    return new ToolError(
      'engine_busy',
      `${capitalize(name)} did not answer within ${seconds} s when asked for ${timeout.what}, so the program was not run. The engine is running but busy or stuck: try again in a moment; if it keeps happening, ask the user to check ${identity?.kind === 'podman' ? 'the Podman service' : 'the engine'} and what else is using it.`,
      { cause },
    );
  }
  return engineUnreachable(cause, target, identity);
}

/**
 * The engine answered, with an error status, a question every call asks (its version, info,
 * runtimes): not a missing engine and not the program's fault. The detail goes to the log.
 */
export function engineRefused(cause: unknown, docker: Dockerode, what: string): ToolError {
  const name = engineName(engineOf(docker), knownIdentity(docker));
  const status = statusCode(cause);
  return new ToolError(
    'sandbox_failed',
    `${capitalize(name)} answered the request for ${what} with an error${status !== undefined ? ` (HTTP ${status})` : ''}, so the program was not run.`,
    { cause, seeLog: true },
  );
}

/** "Podman 4.3.1", "Docker 28.2.2 at tcp://…", or, before the engine has said what it is, the target's display name. */
function engineName(target: EngineTarget | undefined, identity: EngineIdentity | undefined): string {
  if (!identity) {
    if (!target) return 'the container engine';
    // "the local Docker engine" names no product it has not heard from; "tcp://…" is an address.
    return target.displayName.startsWith('the ') ? target.displayName.replace(/Docker engine$/, 'container engine') : `the container engine at ${target.displayName}`;
  }
  const remote = target?.protocol === 'tcp' || target?.protocol === 'ssh';
  return `the ${identity.label} engine${remote ? ` at ${target.displayName}` : ''}`;
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/**
 * The sandbox's container is gone or stopped (docker rm -f, an engine restart, its PID 1 died):
 * the provider replaces it once and runs the program again.
 */
export class SandboxGoneError extends Error {
  constructor(message = 'the sandbox container is gone or stopped', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SandboxGoneError';
  }
}

/** 404 (no such container) and 409 (not running) from a container call: the sandbox is gone. */
export function isGoneStatus(e: unknown): boolean {
  const status = statusCode(e);
  return status === 404 || status === 409;
}

/**
 * The name asked for (create, rename) is another container's. Docker says 409; Podman 4.3.1 says
 * 500, in words that depend on where the create lost the race (measured: ten and twenty CLI
 * processes creating one session's sandbox at once): "the container name … is already in use"
 * (its storage) or "name … is in use: container already exists" (its database). So for Podman
 * this test reads the message.
 */
export function isNameTaken(e: unknown): boolean {
  const status = statusCode(e);
  if (status === 409) return true;
  return status === 500 && chain(e).some((link) => typeof link.message === 'string' && /name .* is (already )?in use/i.test(link.message));
}

/**
 * The work area (a tmpfs) is full. The engine answers such a putArchive with a plain 500 whose
 * only distinguishing part is the kernel's ENOSPC text, so this one test reads the message.
 */
export function isNoSpace(e: unknown): boolean {
  return chain(e).some((link) => link.code === 'ENOSPC' || (typeof link.message === 'string' && /no space left on device/i.test(link.message)));
}

export function statusCode(e: unknown): number | undefined {
  const s = (e as { statusCode?: unknown } | null)?.statusCode;
  return typeof s === 'number' ? s : undefined;
}

/**
 * The model-facing error for an engine that cannot be used. With the target known (the client
 * came from createDockerClient) the sentence names it by its display name, which holds no path
 * and no secret; TLS and SSH failures get their own sentence so the user knows what to fix.
 */
export function engineUnreachable(cause: unknown, engine?: EngineTarget, identity?: EngineIdentity): ToolError {
  const context = engine?.context;
  // Once an engine has said what it is, it is named so: a Podman service is never "Docker".
  const kind = identity ? `${identity.kind === 'podman' ? 'Podman' : 'Docker'} engine` : 'Docker engine';
  const at = context
    ? `The ${kind} of context ${JSON.stringify(context.name)} (${context.endpoint})`
    : engine && engine.displayName !== 'the local Docker engine'
      ? `The ${kind} at ${engine.displayName}`
      : `The ${identity ? `local ${kind}` : kind}`;
  const remote = engine?.protocol === 'tcp' || engine?.protocol === 'ssh';
  let sentence: string;
  switch (transportFailure(cause)) {
    case 'tls_certificate':
      sentence = context
        ? `${at} refused the TLS connection (certificate problem), so the program was not run. Ask the user to check the certificates the context was created with (ca.pem, cert.pem and key.pem must belong to this engine's CA; \`docker context update\` replaces them).`
        : `${at} refused the TLS connection (certificate problem), so the program was not run. Ask the user to check the Docker TLS certificates (DOCKER_CERT_PATH or the certificate folder setting: ca.pem, cert.pem and key.pem must belong to this engine's CA).`;
      break;
    case 'tls_mismatch':
      sentence = `${at} and this client disagree about TLS (one side uses it, the other does not), so the program was not run. Ask the user to check DOCKER_TLS_VERIFY, DOCKER_CERT_PATH or the Docker connection settings.`;
      break;
    case 'ssh_host_key':
      sentence = `${at} could not be reached because its SSH host key is not in the user's known_hosts file or does not match it, so the program was not run. Ask the user to connect once with ssh to check and accept the host key.`;
      break;
    case 'ssh_auth':
      sentence = `${at} could not be reached because the SSH server accepted none of the user's keys, so the program was not run. Ask the user to load the right key into the SSH agent (or ~/.ssh) for that host.`;
      break;
    case 'ssh':
      sentence = `${at} could not be reached over SSH, so the program was not run. Ask the user to check that ssh to that host works and that the docker command runs there for that user.`;
      break;
    default:
      sentence = permissionDenied(cause)
        ? `${at} refused this user (permission denied on its socket), so the program was not run. Ask the user to add their account to the docker group (sudo usermod -aG docker $USER, then log out and in again), or to point the engine connection (DOCKER_HOST, a Docker context, or this tool's engine settings) at an engine this user may use, such as rootless Docker or Podman.`
        : context
        ? `The Docker context ${JSON.stringify(context.name)} points at ${context.endpoint}, where no Docker engine answers, so the program was not run; ask the user to start that engine or to switch to a working context (docker context use NAME), then try again.`
        : remote
        ? `${at} is not reachable, so the program was not run. Ask the user to check that the engine runs and that the Docker connection settings (DOCKER_HOST or the engine setting) are right, then try again.`
        : identity?.kind === 'podman'
          ? `${at} (${identity.label}) is not reachable, so the program was not run. Ask the user to start the Podman service (podman system service, or Podman Desktop) or to check the engine connection settings, then try again.`
          : 'Docker is not reachable, so the program was not run. Ask the user to start Docker (Docker Desktop or the docker service) or to check the Docker connection settings, then try again.';
  }
  return new ToolError('engine_unreachable', sentence, { cause });
}
