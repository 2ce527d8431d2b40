/**
 * Credentials on the command line and the MCP server: bindings from a JSON file (`--credentials
 * FILE`, the setting's shape), values from files or descriptors the person names (`--secret
 * N=FILE`), read once as the process starts and held only in its memory until a proxy starts.
 * Never a value as an argument or an environment variable, which `ps` and `docker inspect` show.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { SECRET_NAME, parseBindings, reachableBindings, standInsFor, valueProblem, type CredentialValues, type SandboxCredentials, type WrittenBinding } from '../core/credentials';
import { domainLists, type NetworkPolicy } from '../core/network';
import { UsageError, type Parsed } from './options';
import type { CliOutput } from './report';

/** Values read from files; the generation is the files' identities (never their contents), so processes reading the same files share sandboxes. */
class FileValues implements CredentialValues {
  // A true private field: no JSON of a spec, and no other process it is handed to, ever sees it.
  readonly #values: ReadonlyMap<string, string>;

  constructor(
    values: ReadonlyMap<string, string>,
    readonly generation: string,
  ) {
    this.#values = values;
  }

  read(secret: string): Promise<string | undefined> {
    return Promise.resolve(this.#values.get(secret));
  }
}

/** --secret N=FILE, each read now: a descriptor or pipe can be read only once. */
function readSecrets(p: Parsed): { values: Map<string, string>; identity: string[] } {
  const values = new Map<string, string>();
  const identity: string[] = [];
  for (const spec of p.flags.get('secret') ?? []) {
    const at = spec.indexOf('=');
    const name = at > 0 ? spec.slice(0, at) : '';
    const file = at > 0 ? spec.slice(at + 1) : '';
    if (!SECRET_NAME.test(name) || file === '') throw new UsageError('--secret takes N=FILE: a secret name (letters, digits, ".", "_", "-") and the file or descriptor (/dev/fd/3) its value is read from');
    let text: string;
    let stat: fs.Stats;
    try {
      stat = fs.statSync(file);
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      throw new UsageError(`--secret ${name}: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    // A file's last line break is the editor's, not the secret's.
    const value = text.replace(/\r?\n$/, '');
    const problem = valueProblem(value);
    if (problem) throw new UsageError(`--secret ${name}: the value in ${file} ${problem}`);
    values.set(name, value);
    identity.push(`${name}\0${file}\0${stat.dev}\0${stat.ino}\0${stat.mtimeMs}\0${stat.size}`);
  }
  return { values, identity };
}

/** The sandbox's credentials from --credentials and --secret, or undefined when none are bound (said on `output`). */
export function credentialsFrom(p: Parsed, policy: NetworkPolicy | undefined, output: CliOutput): SandboxCredentials | undefined {
  const file = p.flags.get('credentials')?.at(-1);
  const { values, identity } = readSecrets(p);
  if (file === undefined) {
    if (values.size) output.err('codeact-sandbox: --secret is given without --credentials, which binds it to hosts; it is not used\n');
    return undefined;
  }
  let written: unknown;
  try {
    written = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new UsageError(`--credentials ${file} is not a JSON file (${e instanceof SyntaxError ? e.message : ((e as NodeJS.ErrnoException).code ?? 'unreadable')})`);
  }
  if (!Array.isArray(written)) throw new UsageError(`--credentials ${file} must hold a JSON list of bindings`);
  const parsed = parseBindings(written as WrittenBinding[], '--credentials');
  for (const problem of parsed.problems) output.err(`codeact-sandbox: ${problem}\n`);
  if (!policy) {
    output.err('codeact-sandbox: --credentials binds secrets, but no --allow-domain lets programs reach a host; they are not used\n');
    return undefined;
  }
  const reachable = reachableBindings(parsed.bindings, domainLists(policy.allow, policy.deny), '--allow-domain');
  for (const problem of reachable.problems) output.err(`codeact-sandbox: ${problem}\n`);
  const missing = reachable.bindings.find((b) => !values.has(b.secret));
  if (missing) throw new UsageError(`--credentials binds the secret ${missing.secret}, which no --secret ${missing.secret}=FILE gives`);
  if (reachable.bindings.length === 0) return undefined;
  const generation = createHash('sha256').update(identity.sort().join('\n')).digest('hex').slice(0, 16);
  return { bindings: reachable.bindings, standIns: standInsFor(reachable.bindings), values: new FileValues(values, generation) };
}
