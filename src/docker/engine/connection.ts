import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import Dockerode from 'dockerode';
import { ToolError } from '../../core/errors';
import { defaultSocketPath } from './plainSocket';
import { resolveEngine } from './resolve';
import { SshDialAgent, sshOptions, type SshFiles } from './ssh';
import type { EngineTarget } from './target';

/**
 * The Docker client for an engine. Finding the engine (settings, DOCKER_HOST, docker CLI
 * contexts) lives in ./engine/; what other files import from here stays here.
 */
export { resolveEngine, type EngineLookup } from './resolve';
export { defaultSocketPath } from './plainSocket';
export { hostKeyKnown, type KnownHost } from './ssh';
export type { EngineContext, EngineOptions, EngineProtocol, EngineSource, EngineTarget, EngineTls } from './target';

/** Files and lookups createDockerClient may use; tests point them at temporary folders. */
export interface ClientEnvironment extends SshFiles {
  env?: NodeJS.ProcessEnv;
}

const clientTargets = new WeakMap<Dockerode, EngineTarget>();

/** The target a client was made for (for error sentences and the log), when it came from createDockerClient. */
export function engineOf(docker: Dockerode): EngineTarget | undefined {
  return clientTargets.get(docker);
}

/**
 * A Docker client for `target` (default: resolved from the environment). Certificates and SSH
 * keys are read here; a folder without them is a ToolError('invalid_settings') that names no path.
 */
export function createDockerClient(target: EngineTarget = resolveEngine(), environment: ClientEnvironment = {}): Dockerode {
  const env = environment.env ?? process.env;
  const options: Dockerode.DockerOptions & Record<string, unknown> = {
    // Everything explicit: docker-modem merges its own environment defaults under these.
    socketPath: undefined,
    host: undefined,
    port: undefined,
    protocol: undefined,
    ca: undefined,
    cert: undefined,
    key: undefined,
  };
  switch (target.protocol) {
    case 'unix':
    case 'npipe':
      options.socketPath = target.socketPath ?? defaultSocketPath(target.protocol, env);
      break;
    case 'tcp': {
      options.host = target.host;
      options.port = target.port;
      if (target.tls) {
        const material = readTlsMaterial(target);
        options.protocol = 'https';
        options.ca = material.ca;
        options.cert = material.cert;
        options.key = material.key;
        // The agent carries the policy: its options win over the request's in Node's https.
        options.agent = new https.Agent({
          ...(material.ca ? { ca: material.ca } : {}),
          ...(material.cert && material.key ? { cert: material.cert, key: material.key } : {}),
          rejectUnauthorized: target.tls.verify,
          keepAlive: true,
        });
      } else {
        options.protocol = 'http';
      }
      break;
    }
    case 'ssh': {
      // Plain HTTP whose connections are `docker system dial-stdio` sessions over SSH (what the
      // docker CLI does). Our own agent rather than docker-modem's 'ssh' protocol: that one
      // builds invalid ssh: URLs (a Node deprecation warning on every request) and hands a
      // failed exec's stream on anyway.
      options.host = target.host;
      options.port = target.port;
      options.protocol = 'http';
      options.agent = new SshDialAgent({
        ...sshOptions(target, env, environment),
        host: target.host!,
        port: target.port ?? 22,
        username: target.username ?? (env.USER || env.LOGNAME || env.USERNAME || os.userInfo().username),
      });
      break;
    }
  }
  const docker = withoutDockerEnv(() => new Dockerode(options));
  clientTargets.set(docker, target);
  return docker;
}

/**
 * Environment for a child process that runs the docker CLI (the Dev Containers CLI does), so it
 * reaches the same engine with the same certificates. Inherited DOCKER_* values are replaced.
 */
export function dockerCliEnv(target: EngineTarget, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  for (const k of ['DOCKER_HOST', 'DOCKER_TLS_VERIFY', 'DOCKER_TLS', 'DOCKER_CERT_PATH', 'DOCKER_CONTEXT']) delete out[k];
  if (target.context) {
    // The CLI reads the same context itself: endpoint, TLS material and all.
    out.DOCKER_CONFIG = target.context.configDir;
    out.DOCKER_CONTEXT = target.context.name;
    return out;
  }
  switch (target.protocol) {
    case 'unix':
      out.DOCKER_HOST = `unix://${target.socketPath ?? defaultSocketPath('unix', env)}`;
      break;
    case 'npipe':
      out.DOCKER_HOST = `npipe://${target.socketPath ?? defaultSocketPath('npipe', env)}`;
      break;
    case 'tcp':
      out.DOCKER_HOST = target.url;
      if (target.tls) {
        out.DOCKER_CERT_PATH = target.tls.certPath;
        if (target.tls.verify) out.DOCKER_TLS_VERIFY = '1';
        else out.DOCKER_TLS = '1';
      }
      break;
    case 'ssh':
      out.DOCKER_HOST = target.url;
      break;
  }
  return out;
}

function readTlsMaterial(target: EngineTarget): { ca?: Buffer; cert?: Buffer; key?: Buffer } {
  const tls = target.tls!;
  const read = (name: string) => fs.readFileSync(path.join(tls.certPath, name));
  const optional = (name: string) => {
    try {
      return read(name);
    } catch {
      return undefined;
    }
  };
  if (target.certSource === 'context') {
    // A context's folder holds what `docker context create` was given; without ca.pem the
    // system's roots verify the engine, and a client certificate needs both of its files.
    const [ca, cert, key] = [optional('ca.pem'), optional('cert.pem'), optional('key.pem')];
    return { ...(ca ? { ca } : {}), ...(cert && key ? { cert, key } : {}) };
  }
  try {
    const cert = read('cert.pem');
    const key = read('key.pem');
    let ca: Buffer | undefined;
    try {
      ca = read('ca.pem');
    } catch (e) {
      if (tls.verify) throw e;
    }
    return { ...(ca ? { ca } : {}), cert, key };
  } catch (e) {
    const where = target.certSource === 'override' ? `the certificate folder set in ${target.hint}` : 'the certificate folder (DOCKER_CERT_PATH, default ~/.docker)';
    throw new ToolError(
      'invalid_settings',
      `The TLS certificates for the Docker engine at ${target.displayName} could not be read, so the program was not run. Ask the user to check ${where}: it must contain ca.pem, cert.pem and key.pem.`,
      { cause: e },
    );
  }
}

const MODEM_ENV = ['DOCKER_HOST', 'DOCKER_TLS_VERIFY', 'DOCKER_CERT_PATH', 'DOCKER_PATH_PREFIX', 'DOCKER_CLIENT_TIMEOUT'];

/**
 * docker-modem reads the environment in its constructor (and throws on a malformed DOCKER_HOST
 * or a missing DOCKER_CERT_PATH file) even when every option is given. The decision is already
 * made, so construct it with those variables out of sight. Synchronous: nothing else runs meanwhile.
 */
function withoutDockerEnv<T>(make: () => T): T {
  const saved = MODEM_ENV.map((k) => [k, process.env[k]] as const);
  for (const k of MODEM_ENV) delete process.env[k];
  try {
    return make();
  } finally {
    for (const [k, v] of saved) if (v !== undefined) process.env[k] = v;
  }
}
