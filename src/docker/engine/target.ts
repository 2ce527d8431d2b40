/**
 * Which Docker engine to talk to, and why. Decided by resolveEngine (./resolve.ts) the way the
 * docker CLI decides it; used by createDockerClient (connection.ts), the error sentences and
 * the status shown to the user.
 */
export type EngineProtocol = 'unix' | 'npipe' | 'tcp' | 'ssh';

/** Where the address came from: the override (settings, CLI flags), DOCKER_HOST, a Docker context, or nowhere. */
export type EngineSource = 'settings' | 'environment' | 'context' | 'default';

export interface EngineOptions {
  /**
   * Engine URL that overrides DOCKER_HOST: unix:///path, npipe:////./pipe/name, tcp://host:port
   * (or host:port), ssh://user@host:port. When set, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH are
   * ignored too: the whole connection comes from these options.
   */
  host?: string;
  /**
   * A context of the docker CLI by name, as its --context: wins over DOCKER_HOST, DOCKER_CONTEXT
   * and the CLI's current context; conflicts with `host`. `default` means the platform default.
   */
  context?: string;
  /** Folder holding ca.pem, cert.pem and key.pem (the docker CLI's layout). Implies TLS for tcp://. */
  certPath?: string;
  /**
   * Verify the engine's certificate against ca.pem (and present cert.pem/key.pem). Undefined:
   * on whenever TLS is used because of these options; with `host` unset it falls back to the
   * environment's DOCKER_TLS_VERIFY.
   */
  tlsVerify?: boolean;
  /** How a model-facing error names the override, e.g. "the codeactSandbox.dockerHost setting" or "--docker-host". */
  hint?: string;
  /**
   * How the reason for the choice names `host` and `context` ("setting codeactSandbox.dockerHost",
   * "--context"); shown in the log and the status bar.
   */
  origin?: { host?: string; context?: string };
}

export interface EngineTls {
  /** Folder with ca.pem, cert.pem and key.pem. */
  certPath: string;
  /** Check the engine's certificate against ca.pem; false only when asked for (DOCKER_CERT_PATH without DOCKER_TLS_VERIFY, a context's SkipTLSVerify). */
  verify: boolean;
}

/** The docker CLI context an engine was found through. */
export interface EngineContext {
  name: string;
  /** The docker CLI's configuration folder holding its store (DOCKER_CONFIG or ~/.docker). */
  configDir: string;
  /** The endpoint as the context stores it, for the sentence that says it points at nothing. */
  endpoint: string;
}

export interface EngineTarget {
  protocol: EngineProtocol;
  source: EngineSource;
  /**
   * Why this engine, for people (the log, the status bar; never the model): "context colima
   * (DOCKER_CONTEXT)", "DOCKER_HOST", "setting codeactSandbox.dockerHost", "platform default".
   */
  reason: string;
  /** Set when the engine was found through a docker CLI context. */
  context?: EngineContext;
  /** unix / npipe: the socket or pipe; undefined means the platform's default one. */
  socketPath?: string;
  /** tcp / ssh. */
  host?: string;
  port?: number;
  /** ssh: the login; undefined means the current user. */
  username?: string;
  /** tcp: TLS material and policy; undefined means plain HTTP. */
  tls?: EngineTls;
  /**
   * tcp with TLS: where the certificate folder came from (for the error that names it). A
   * context's folder holds only what `docker context create` was given, so each file is optional.
   */
  certSource?: 'override' | 'environment' | 'default' | 'context';
  /** How model-facing errors name the override (EngineOptions.hint). */
  hint: string;
  /** The address as DOCKER_HOST would hold it, without secrets; '' for the platform default. */
  url: string;
  /** Short, for the model and the status bar: no paths, no secrets ("tcp://127.0.0.1:2376", "the local Docker engine"). */
  displayName: string;
  /** One line for the log: address, transport security and origin. No secrets, no file contents. */
  description: string;
}
