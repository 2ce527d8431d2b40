import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { z } from 'zod';
import { ToolError } from '../../core/errors';

/**
 * The docker CLI's configuration and context store, read as the CLI reads them: the folder is
 * DOCKER_CONFIG or ~/.docker; config.json's `currentContext` names the context `docker context
 * use` chose; a context lives in contexts/meta/<sha256 of its name>/meta.json (its endpoint) and
 * contexts/tls/<sha256>/docker/ (ca.pem, cert.pem, key.pem, only those it was created with).
 * Colima, OrbStack, Rancher Desktop, Podman machine and Docker Desktop register themselves here.
 * Pure: every file is read through `read`, which answers undefined for a file it cannot read.
 */
export type ReadFile = (file: string) => string | undefined;

/** The context name that means "no context": the platform default (or DOCKER_HOST). */
export const DEFAULT_CONTEXT = 'default';

export { dockerConfigDir } from './plainSocket';

export interface CliConfig {
  file: string;
  currentContext?: string;
  /** Why config.json was ignored; the docker CLI warns and goes on without it, and so do we. */
  problem?: string;
}

// Tolerant: config.json holds much else (auths, credsStore, plugins) that is not ours to judge.
const configSchema = z.object({ currentContext: z.string().optional() });

export function readCliConfig(configDir: string, read: ReadFile): CliConfig {
  const file = path.join(configDir, 'config.json');
  const text = read(file);
  if (text === undefined) return { file };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { file, problem: `${file} is not valid JSON` };
  }
  const parsed = configSchema.safeParse(json);
  if (!parsed.success) return { file, problem: `${file} has a currentContext that is not a string` };
  const current = parsed.data.currentContext?.trim();
  return { file, ...(current ? { currentContext: current } : {}) };
}

/** A context and who chose it ("DOCKER_CONTEXT", "setting codeactSandbox.dockerContext", ...). */
export interface ContextChoice {
  name: string;
  chosenBy: string;
}

export interface StoredContext {
  name: string;
  /** The docker endpoint's address (unix://, tcp://, ssh://, npipe://). */
  host: string;
  skipTlsVerify: boolean;
  /** The context's TLS folder and which of its files exist. */
  tlsDir: string;
  tlsFiles: { ca: boolean; cert: boolean; key: boolean };
}

const metaSchema = z.object({
  Endpoints: z
    .object({
      docker: z.object({ Host: z.string().optional(), SkipTLSVerify: z.boolean().optional() }).optional(),
    })
    .optional(),
});

export function contextDigest(name: string): string {
  return createHash('sha256').update(name).digest('hex');
}

/**
 * The stored context `choice` names. A context that does not exist, cannot be read or has no
 * docker endpoint is a ToolError('invalid_settings'), as it is an error for the docker CLI:
 * falling back to another engine would run programs somewhere the user did not choose.
 */
export function readContext(configDir: string, choice: ContextChoice, read: ReadFile): StoredContext {
  const digest = contextDigest(choice.name);
  const named = `The Docker context ${JSON.stringify(choice.name)} (chosen by ${choice.chosenBy})`;
  const text = read(path.join(configDir, 'contexts', 'meta', digest, 'meta.json'));
  if (text === undefined) {
    throw new ToolError(
      'invalid_settings',
      `${named} does not exist, so the program was not run. Ask the user to choose a context that \`docker context ls\` lists, or to create this one.`,
    );
  }
  let parsed: z.infer<typeof metaSchema> | undefined;
  try {
    const result = metaSchema.safeParse(JSON.parse(text));
    if (result.success) parsed = result.data;
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined) {
    throw new ToolError(
      'invalid_settings',
      `${named} could not be read (its meta.json is not valid), so the program was not run. Ask the user to check it with \`docker context inspect ${choice.name}\`, or to create it again.`,
    );
  }
  const endpoint = parsed.Endpoints?.docker;
  const host = endpoint?.Host?.trim();
  if (!host) {
    throw new ToolError(
      'invalid_settings',
      `${named} has no Docker endpoint, so the program was not run. Ask the user to give it one (\`docker context update ${choice.name} --docker host=...\`) or to choose another context.`,
    );
  }
  const tlsDir = path.join(configDir, 'contexts', 'tls', digest, 'docker');
  const has = (file: string) => read(path.join(tlsDir, file)) !== undefined;
  return {
    name: choice.name,
    host,
    skipTlsVerify: endpoint?.SkipTLSVerify === true,
    tlsDir,
    tlsFiles: { ca: has('ca.pem'), cert: has('cert.pem'), key: has('key.pem') },
  };
}
