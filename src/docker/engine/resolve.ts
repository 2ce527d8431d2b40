import * as os from 'node:os';
import * as path from 'node:path';
import { ToolError } from '../../core/errors';
import { DEFAULT_CONTEXT, dockerConfigDir, readCliConfig, readContext, type ContextChoice, type ReadFile } from './context';
import { readOrUndefined } from './plainSocket';
import { expandSocketAddress } from './podmanSockets';
import type { EngineContext, EngineOptions, EngineSource, EngineTarget, EngineTls } from './target';

/** Effects of the resolution; tests give a temporary store and an engine that does not exist. */
export interface EngineLookup {
  /** Reads a file of the docker CLI's configuration; undefined when it cannot. Default: the file system. */
  readFile?: ReadFile;
  /** The address used when nothing names an engine. Default: the platform's socket or named pipe. */
  platformDefault?: string;
}

const DEFAULT_HINT = 'the CodeAct Sandbox Docker engine settings';
const CURRENT_CONTEXT = "the docker CLI's current context";


/**
 * Decides the engine as the docker CLI does: an address override (the dockerHost setting,
 * --docker-host), or a context override (the dockerContext setting, --context; both at once is
 * a conflict, as for the CLI's -H and --context), then DOCKER_HOST, then DOCKER_CONTEXT, then the
 * current context of the CLI's config.json, then the platform default. The context `default`
 * means the platform default. A context brings its own endpoint and TLS material: DOCKER_CERT_PATH,
 * DOCKER_TLS_VERIFY and the certificate options apply to an address only. Reads only the CLI's
 * configuration, and only when no address decides first; touches no network. A malformed address
 * is a ToolError('invalid_settings') whose sentence never repeats the value (it can hold a user
 * name or a password).
 */
export function resolveEngine(
  options: EngineOptions = {},
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  lookup: EngineLookup = {},
): EngineTarget {
  const hint = options.hint ?? DEFAULT_HINT;
  const origin = { host: options.origin?.host ?? 'the settings', context: options.origin?.context ?? 'the settings' };
  const read: ReadFile = lookup.readFile ?? readOrUndefined;
  const home = env.HOME || env.USERPROFILE || os.homedir();
  const address = (raw: string | undefined, source: EngineSource, reason: string, where: string): EngineTarget => {
    const tls = source === 'default' && raw === undefined ? {} : addressTls(options, env, source === 'settings', home);
    return parseAddress(raw, { source, reason, where, hint, platform, ...tls });
  };
  const platformDefault = (reason: string) => address(nonEmpty(lookup.platformDefault), 'default', reason, 'the platform default');
  const viaContext = (choice: ContextChoice): EngineTarget => {
    if (choice.name === DEFAULT_CONTEXT) return platformDefault(`platform default (context default, ${choice.chosenBy})`);
    const configDir = dockerConfigDir(env, home);
    const stored = readContext(configDir, choice, read);
    const context: EngineContext = { name: stored.name, configDir, endpoint: stored.host };
    const { ca, cert, key } = stored.tlsFiles;
    // As the docker CLI: TLS when the context has TLS material or skips verification.
    const tls = ca || cert || key || stored.skipTlsVerify ? { certPath: stored.tlsDir, verify: !stored.skipTlsVerify } : undefined;
    return parseAddress(stored.host, {
      source: 'context',
      reason: `context ${stored.name} (${choice.chosenBy})`,
      where: `the Docker context ${JSON.stringify(stored.name)}`,
      hint,
      platform,
      context,
      ...(tls ? { tls, certSource: 'context' as const, certsFrom: `certificates from context ${stored.name}`, clientCertificate: cert && key } : {}),
    });
  };

  const hostOption = nonEmpty(options.host);
  const contextOption = nonEmpty(options.context);
  if (hostOption !== undefined && contextOption !== undefined) {
    throw new ToolError(
      'invalid_settings',
      `Both a Docker engine address (${origin.host}) and a Docker context (${origin.context}) are set, so the program was not run. Ask the user to clear one of them.`,
    );
  }
  // A setting is not read by a shell: `~` and `$XDG_RUNTIME_DIR` are expanded here, as Podman's documentation writes its socket.
  if (hostOption !== undefined) return address(expandSocketAddress(hostOption, env, home), 'settings', origin.host, hint);
  if (contextOption !== undefined) return viaContext({ name: contextOption, chosenBy: origin.context });
  const envHost = nonEmpty(env.DOCKER_HOST);
  if (envHost !== undefined) return address(envHost, 'environment', 'DOCKER_HOST', 'the DOCKER_HOST environment variable');
  const envContext = nonEmpty(env.DOCKER_CONTEXT);
  if (envContext !== undefined) return viaContext({ name: envContext, chosenBy: 'DOCKER_CONTEXT' });
  const config = readCliConfig(dockerConfigDir(env, home), read);
  if (config.currentContext !== undefined) return viaContext({ name: config.currentContext, chosenBy: CURRENT_CONTEXT });
  return platformDefault(config.problem ? `platform default (${config.problem})` : 'platform default');
}

interface AddressTls {
  tls?: EngineTls;
  certSource?: EngineTarget['certSource'];
  certsFrom?: string;
  /** False when the TLS folder has no client certificate (possible for a context only). */
  clientCertificate?: boolean;
}

/**
 * TLS for an address (used for tcp:// only): certPath and tlsVerify each override their variable
 * (DOCKER_CERT_PATH, DOCKER_TLS_VERIFY); an overridden address ignores both variables. As in the
 * Docker SDK a certificate folder turns TLS on; DOCKER_TLS_VERIFY (any non-empty value, as in the
 * docker CLI) turns verification on and defaults the folder to ~/.docker.
 */
function addressTls(options: EngineOptions, env: NodeJS.ProcessEnv, overridden: boolean, home: string): AddressTls {
  const optCert = nonEmpty(options.certPath);
  const certPath = optCert ?? (overridden ? undefined : nonEmpty(env.DOCKER_CERT_PATH));
  const envVerify = !overridden && nonEmpty(env.DOCKER_TLS_VERIFY) !== undefined;
  // A certificate folder given as an override means verified TLS unless tlsVerify says otherwise.
  const verify = options.tlsVerify ?? (envVerify || optCert !== undefined);
  if (certPath === undefined && !verify) return {};
  return {
    tls: { certPath: certPath ?? path.join(home, '.docker'), verify },
    certSource: optCert !== undefined ? 'override' : certPath !== undefined ? 'environment' : 'default',
    certsFrom: optCert !== undefined ? 'certificates from the settings' : certPath !== undefined ? 'certificates from DOCKER_CERT_PATH' : 'certificates from ~/.docker',
  };
}

interface AddressContext extends AddressTls {
  source: EngineSource;
  reason: string;
  /** How an invalid address's sentence names where it was found. */
  where: string;
  hint: string;
  platform: NodeJS.Platform;
  context?: EngineContext;
}

/** What every target of one address carries: where it came from and how to fix it. */
type Common = Pick<EngineTarget, 'source' | 'reason' | 'hint' | 'context'>;

/** The target for one address (undefined: the platform's socket or pipe). */
function parseAddress(raw: string | undefined, at: AddressContext): EngineTarget {
  const origin = at.source === 'default' ? at.reason : `from ${at.reason}`;
  const common: Common = { source: at.source, reason: at.reason, hint: at.hint, ...(at.context ? { context: at.context } : {}) };
  const invalid = (why = '') =>
    new ToolError(
      'invalid_settings',
      `The Docker engine address in ${at.where} is not valid${why}, so the program was not run. Ask the user to correct it (unix:///path, npipe:////./pipe/name, tcp://HOST:PORT or ssh://USER@HOST[:PORT]).`,
    );
  if (raw === undefined) {
    const pipe = at.platform === 'win32';
    return {
      protocol: pipe ? 'npipe' : 'unix',
      ...common,
      url: '',
      displayName: 'the local Docker engine',
      description: `local Docker engine (${pipe ? 'default named pipe' : 'default socket'}; ${origin})`,
    };
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(raw)?.[1]?.toLowerCase();
  if (scheme === 'unix' || scheme === 'npipe') return socketTarget(scheme, raw.slice(scheme.length + 3), common, origin, invalid);
  if (scheme !== undefined && scheme !== 'tcp' && scheme !== 'ssh') throw invalid(` (the ${scheme}:// scheme is not supported)`);
  const address = networkAddress(scheme ? raw : `tcp://${raw}`, invalid);
  return scheme === 'ssh' ? sshTarget(address, at, common, origin) : tcpTarget(address, at, common, origin, invalid);
}

type Invalid = (why?: string) => ToolError;

function socketTarget(scheme: 'unix' | 'npipe', rest: string, common: Common, origin: string, invalid: Invalid): EngineTarget {
  const socketPath = rest === '' ? undefined : rest;
  if (socketPath !== undefined && /[\0\n]/.test(socketPath)) throw invalid();
  return {
    protocol: scheme,
    ...common,
    ...(socketPath !== undefined ? { socketPath } : {}),
    url: `${scheme}://${socketPath ?? ''}`,
    displayName: 'the local Docker engine',
    description: `local Docker engine at ${scheme}://${socketPath ?? (scheme === 'npipe' ? '(default pipe)' : '(default socket)')} (${origin})`,
  };
}

/** A tcp:// or ssh:// address, checked: a host, no path, query or fragment, a port in range. */
interface NetworkAddress {
  url: URL;
  hostname: string;
  /** The host without an IPv6 address's brackets. */
  bare: string;
  port: number | undefined;
}

function networkAddress(raw: string, invalid: Invalid): NetworkAddress {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid();
  }
  const hostname = url.hostname;
  if (!hostname) throw invalid();
  if (url.pathname && url.pathname !== '/') throw invalid(' (it must not have a path)');
  if (url.search || url.hash) throw invalid();
  const port = url.port === '' ? undefined : Number(url.port);
  if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535)) throw invalid();
  return { url, hostname, bare: hostname.replace(/^\[(.*)\]$/, '$1'), port };
}

function sshTarget({ url, hostname, bare, port }: NetworkAddress, at: AddressContext, common: Common, origin: string): EngineTarget {
  if (url.password) {
    throw new ToolError(
      'invalid_settings',
      `The Docker engine address in ${at.where} contains a password, which is not supported, so the program was not run. Ask the user to remove it and log in with an SSH key or agent instead.`,
    );
  }
  const username = url.username ? decodeURIComponent(url.username) : undefined;
  const p = port ?? 22;
  const login = username ? `${encodeURIComponent(username)}@` : '';
  const shown = `ssh://${login}${hostname}:${p}`;
  return {
    protocol: 'ssh',
    ...common,
    host: bare,
    port: p,
    ...(username !== undefined ? { username } : {}),
    url: `ssh://${login}${hostname}${port !== undefined ? `:${port}` : ''}`,
    displayName: shown,
    description: `Docker engine over SSH at ${shown} (${origin}; key from the SSH agent or ~/.ssh, host key checked against known_hosts)`,
  };
}

function tcpTarget({ url, hostname, bare, port }: NetworkAddress, at: AddressContext, common: Common, origin: string, invalid: Invalid): EngineTarget {
  const { tls } = at;
  if (url.username || url.password) throw invalid(' (tcp:// addresses take no user name or password)');
  const p = port ?? (tls ? 2376 : 2375);
  const shown = `tcp://${hostname}:${p}`;
  const client = at.clientCertificate === false ? 'TLS without a client certificate' : 'TLS with a client certificate';
  const security = tls
    ? `${client}, engine certificate ${tls.verify ? 'verified' : 'NOT verified'}, ${at.certsFrom}`
    : 'plain HTTP, no TLS';
  return {
    protocol: 'tcp',
    ...common,
    host: bare,
    port: p,
    ...(tls ? { tls, ...(at.certSource ? { certSource: at.certSource } : {}) } : {}),
    url: shown,
    displayName: shown,
    description: `Docker engine at ${shown} (${security}; ${origin})`,
  };
}

function nonEmpty(s: string | undefined): string | undefined {
  const t = s?.trim();
  return t ? t : undefined;
}
