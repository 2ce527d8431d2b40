import { ToolError } from '../errors';
import { formatBytes } from '../format';
import { globMatcher } from './glob';
import { nearMisses, MAX_NEAR_MISSES } from './nearMisses';

/**
 * File names the model (or a model-written program) gives us. They end up as paths on the
 * host, so anything but a plain relative POSIX path is refused before it touches a file system.
 */

export const MAX_NAME_CHARS = 1024;
export const MAX_NAME_SEGMENTS = 32;

export type NameClass = { kind: 'ok'; normalized: string } | { kind: 'traversal' };

// C0/C1 controls (NUL included), and the invisible bidi and direction marks that make a name
// read differently from what it is.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
// A lone surrogate cannot be encoded into a file name; two such names could map to one file.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// Windows opens a device, not a file, for these names whatever the folder or extension.
const WINDOWS_DEVICE = /^(con|prn|aux|nul|conin\$|conout\$|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$/i;

/**
 * `ok` with the name in Unicode NFC (macOS stores decomposed names; the model writes composed
 * ones), or `traversal` for anything that could leave the folder it is resolved in or mean
 * something other than one file there. One verdict for all failures on purpose: callers must
 * not echo such a name, so there is nothing finer to report.
 */
export function classifyName(name: string): NameClass {
  const traversal = { kind: 'traversal' } as const;
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_CHARS) return traversal;
  if (CONTROL.test(name) || LONE_SURROGATE.test(name)) return traversal;
  // ':' covers drive letters (C:), URL schemes (file:, https://) and NTFS alternate streams.
  if (name.includes('\\') || name.includes(':')) return traversal;
  if (name.startsWith('/') || name.startsWith('~')) return traversal;
  const normalized = name.normalize('NFC');
  const segments = normalized.split('/');
  if (segments.length > MAX_NAME_SEGMENTS) return traversal;
  for (const segment of segments) {
    // Empty ('a//b', 'a/'), '.', '..' and all-dot segments; Windows also drops a trailing dot
    // or space, so 'a.' and 'a ' would alias 'a'.
    if (segment.length === 0 || /^\.+$/.test(segment)) return traversal;
    if (/^\s|[\s.]$/.test(segment)) return traversal;
    if (WINDOWS_DEVICE.test(segment)) return traversal;
  }
  return { kind: 'ok', normalized };
}

/**
 * Files that are never shared into a sandbox, even when the user's workspace lists them: a
 * program written by a model must not be able to read credentials and print them back. Chosen
 * from what workstations and repositories hold today, including a workspace opened at the home
 * folder (`.kube/`, `.config/gh/`). Broad on purpose (`*secret*` also refuses `secretary.md`):
 * over-refusing costs the user a rename, under-refusing leaks a key. Example files stay
 * shareable where the rule allows it (`terraform.tfvars.example`; not `.env.example`).
 */
export const DEFAULT_DENY_GLOBS: readonly string[] = [
  // Environment files; direnv's .envrc exports the same kind of variables.
  '.env',
  '.env.*',
  '**/.env',
  '**/.env.*',
  '**/.envrc',
  '**/.git/**',
  '**/.git-credentials',
  // Private keys and certificate or key stores.
  '**/*.pem',
  '**/*.key',
  '**/id_rsa*',
  '**/id_ed25519*',
  '**/id_ecdsa*',
  '**/id_dsa*',
  '**/*.ppk',
  '**/*.p8',
  '**/*.p12',
  '**/*.pfx',
  '**/*.keystore',
  '**/*.jks',
  '**/*.keytab',
  '**/*.ovpn',
  '**/.gnupg/**',
  // Registry, database and web server passwords.
  '**/.npmrc',
  '**/.yarnrc.yml',
  '**/.pypirc',
  '**/.netrc',
  '**/_netrc',
  '**/.pgpass',
  '**/.my.cnf',
  '**/.htpasswd',
  // Cloud and cluster logins; Terraform state and variables hold the secrets of what they manage.
  '**/.aws/**',
  '**/.azure/**',
  '**/.config/gcloud/**',
  '**/.config/gh/**',
  '**/.s3cfg',
  '**/.kube/**',
  '**/*kubeconfig*',
  '**/*.tfstate',
  '**/*.tfstate.*',
  '**/*.tfvars',
  '**/*.tfvars.json',
  '**/.terraform/**',
  '**/.terraformrc',
  '**/terraform.rc',
  '**/.vault-token',
  '**/.ssh/**',
  '**/credentials*',
  '**/*credentials.json',
  '**/*secret*',
  '**/.docker/config.json',
  '**/.dockercfg',
  '**/*.kdbx',
];

/**
 * Deny rules match regardless of case: on Windows and macOS `.ENV` is the same file as `.env`,
 * and `ClientSecret.json` is as secret as `client_secret.json`. Over-refusing here costs the
 * user a rename; under-refusing leaks a key.
 */
export function denyMatcher(denyGlobs: readonly string[]): (name: string) => string | undefined {
  return globMatcher(denyGlobs, { ignoreCase: true });
}

/**
 * One entry of the caller's workspace listing: workspace-relative, '/'-separated; in a
 * multi-root workspace qualified as '<folderName>/<path>' by the caller.
 */
export interface ListedFile {
  name: string;
  size: number;
}

export interface FilesInOptions {
  denyGlobs: readonly string[];
  maxFiles: number;
  maxFileBytes: number;
  /** Covers the shared files and the program together: both land in the same work area. */
  maxTotalBytes: number;
  programBytes: number;
}

/**
 * Which listed files to share for the names the model requested. The listing is the authority:
 * a name that is not in it is never shared, whatever it looks like. Only sizes from the listing
 * are used, so every cap is enforced before a single byte is read. Returns the listing's own
 * entries (their spelling is the one on disk) in request order, duplicates collapsed; throws one
 * `invalid_input` ToolError naming every problem of the call.
 */
export function resolveFilesIn(requested: readonly string[], listing: readonly ListedFile[], opts: FilesInOptions): ListedFile[] {
  const byName = new Map<string, ListedFile>();
  for (const file of listing) {
    const key = file.name.normalize('NFC');
    if (!byName.has(key)) byName.set(key, file);
  }
  const denied = denyMatcher(opts.denyGlobs);
  let shareable: string[] | undefined;
  // Protected names are never offered as suggestions: that would reveal them.
  const shareableNames = () => (shareable ??= [...byName.keys()].filter((n) => denied(n) === undefined));

  const traversalEntries: number[] = [];
  const problems: string[] = [];
  const chosen = new Map<string, ListedFile>();
  const seen = new Set<string>();

  requested.forEach((raw, index) => {
    const verdict = classifyName(raw);
    if (verdict.kind === 'traversal') {
      traversalEntries.push(index + 1);
      // Counted towards the cap; the NUL keeps it apart from valid names, which never hold one.
      seen.add(`\0${raw}`);
      return;
    }
    const name = verdict.normalized;
    if (seen.has(name)) return;
    seen.add(name);
    const file = byName.get(name);
    // Checked before the listing, so a refusal never reveals whether a secret exists.
    const rule = denied(name) ?? (file ? denied(file.name) : undefined);
    if (rule !== undefined) {
      problems.push(
        `${quote(name)} is refused: it is a protected file that may hold secrets (deny rule ${quote(rule)}), and protected files are never shared with the sandbox. Work without it.`,
      );
      return;
    }
    if (!file) {
      problems.push(notFound(name, shareableNames()));
      return;
    }
    chosen.set(name, file);
  });

  if (traversalEntries.length > 0) problems.unshift(traversalSentence(traversalEntries, { noun: 'requested file name' }, 'workspace-relative'));

  const distinct = seen.size;
  if (distinct > opts.maxFiles) {
    problems.push(`${distinct} files were requested; at most ${opts.maxFiles} can be shared with one program. Request fewer files.`);
  }
  const files = [...chosen.values()];
  for (const file of files) {
    if (file.size > opts.maxFileBytes) {
      problems.push(
        `${quote(file.name)} is ${bytesText(file.size)}; one shared file may be at most ${bytesText(opts.maxFileBytes)}. Ask the user for a smaller extract of it.`,
      );
    }
  }
  const filesBytes = files.reduce((sum, f) => sum + f.size, 0);
  if (files.length > 0 && filesBytes + opts.programBytes > opts.maxTotalBytes) {
    problems.push(
      `The requested files come to ${bytesText(filesBytes)} and the program to ${bytesText(opts.programBytes)}: ` +
        `${bytesText(filesBytes + opts.programBytes)} in all, over the ${bytesText(opts.maxTotalBytes)} one call may share. Request fewer or smaller files.`,
    );
  }

  if (problems.length > 0) {
    throw new ToolError('invalid_input', [...problems, 'No files were shared; correct the list of files and call again.'].join('\n'));
  }
  return files;
}

function notFound(name: string, shareable: readonly string[]): string {
  const inside = shareable.filter((n) => n.startsWith(`${name}/`)).sort();
  if (inside.length > 0) {
    return `${quote(name)} is a folder, not a file; request the files in it by name, for example ${inside.slice(0, MAX_NEAR_MISSES).map(quote).join(', ')}.`;
  }
  const similar = nearMisses(name, shareable);
  return similar.length > 0
    ? `${quote(name)} is not in the workspace. Similar names in the workspace: ${similar.map(quote).join(', ')}.`
    : `${quote(name)} is not in the workspace, and no file there has a similar name.`;
}

export interface OutputNameOptions {
  maxFiles: number;
}

/**
 * Names the model declares its program will write, checked before the run: the same path
 * rules as files in, duplicates collapsed, and a set the host can actually store side by side.
 * Returns the normalized names in declaration order, or throws one `invalid_input` ToolError.
 */
export function validateOutputNames(names: readonly string[], opts: OutputNameOptions): string[] {
  const { valid, problems } = checkNameList(names, { noun: 'output name' });
  if (valid.length > opts.maxFiles) {
    problems.push(`${valid.length} output files were declared; at most ${opts.maxFiles} can be collected from one program. Declare fewer files.`);
  }
  if (problems.length > 0) {
    throw new ToolError('invalid_input', [...problems, 'Nothing was run; correct the output names and call again.'].join('\n'));
  }
  return valid;
}

/**
 * Shared by declared outputs and the manifest: classify each name, collapse duplicates, and
 * report every problem (without echoing refused names) plus names that cannot coexist.
 * A name equal to one of `reserved` is dropped, and the reserved names take part in the
 * coexistence check (the manifest lives beside the files it lists).
 */
export interface NameListLabel {
  /** How one name is called in a message, e.g. 'output name'. */
  noun: string;
  /** Where the names came from, e.g. ' in outputs.json'. */
  where?: string;
}

export function checkNameList(
  names: readonly string[],
  label: NameListLabel,
  reserved: readonly string[] = [],
): { valid: string[]; problems: string[] } {
  const traversalEntries: number[] = [];
  const valid: string[] = [];
  const seen = new Set<string>(reserved);
  names.forEach((raw, index) => {
    const verdict = classifyName(raw);
    if (verdict.kind === 'traversal') traversalEntries.push(index + 1);
    else if (!seen.has(verdict.normalized)) {
      seen.add(verdict.normalized);
      valid.push(verdict.normalized);
    }
  });
  const problems = traversalEntries.length > 0 ? [traversalSentence(traversalEntries, label, 'relative')] : [];
  problems.push(...coexistenceProblems([...reserved, ...valid]));
  return { valid, problems };
}

/** Sentences listed per kind of problem; a crafted list of thousands of names must not become a thousand-line message. */
const MAX_PROBLEMS_LISTED = 10;

/**
 * Names that cannot all be stored: ones that differ only in case (one file on Windows and
 * macOS, so the second would be refused late, after the run), and a name that is also the
 * folder of another.
 */
export function coexistenceProblems(names: readonly string[]): string[] {
  const problems: string[] = [];
  const byLower = new Map<string, string>();
  for (const name of names) {
    const lower = name.toLowerCase();
    const first = byLower.get(lower);
    if (first !== undefined) problems.push(`${quote(first)} and ${quote(name)} differ only in case; use names that differ in more than case.`);
    else byLower.set(lower, name);
  }
  for (const name of names) {
    const segments = name.split('/');
    for (let i = 1; i < segments.length; i++) {
      const folder = byLower.get(segments.slice(0, i).join('/').toLowerCase());
      if (folder !== undefined) {
        problems.push(`${quote(folder)} cannot be both a file and the folder of ${quote(name)}.`);
        break;
      }
    }
  }
  if (problems.length <= MAX_PROBLEMS_LISTED) return problems;
  return [...problems.slice(0, MAX_PROBLEMS_LISTED), `... and ${problems.length - MAX_PROBLEMS_LISTED} more names that cannot be stored together.`];
}

/** Positions only, never the names: a refused name may be crafted to be read back. */
function traversalSentence(entries: number[], { noun, where = '' }: NameListLabel, relativeTo: string): string {
  const shown = entries.slice(0, MAX_PROBLEMS_LISTED).join(', ') + (entries.length > MAX_PROBLEMS_LISTED ? ', ...' : '');
  const which = entries.length === 1 ? `entry ${shown}` : `entries ${shown}`;
  const subject =
    entries.length === 1
      ? `One ${noun}${where} is not a plain ${relativeTo} path`
      : `${entries.length} ${noun}s${where} are not plain ${relativeTo} paths`;
  return (
    `${subject} (${which}). Use a path like "data/input.csv" with '/' between folders; '..' and '.' as folder names, ` +
    `a leading '/' or '~', ':', '\\' and control characters are not allowed.`
  );
}

export function quote(name: string): string {
  return JSON.stringify(name);
}

export function bytesText(n: number): string {
  return n < 1024 ? `${n} bytes` : `${formatBytes(n)} (${n} bytes)`;
}
