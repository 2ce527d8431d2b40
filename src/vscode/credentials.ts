/**
 * The person's credentials in VS Code: values in SecretStorage (the OS keychain), bindings in the
 * user's own settings (`codeactSandbox.credentials`, application scope; a workspace's value is
 * ignored, config.ts). Commands add one (value, hosts, how it is sent), list them by name, and
 * remove one. A value is read only when a sandbox's proxy starts, and goes to it alone.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { SECRET_NAME, parseBindings, standInsFor, valueProblem, type CredentialBinding, type CredentialValues, type SandboxCredentials, type WrittenBinding } from '../core/credentials';
import { patternProblem } from '../core/network';
import type { Logger } from '../core/logger';
import type { CommandTable } from './commands';
import { COMMAND, CONFIG_SECTION } from './ids';

const SECRET_PREFIX = 'codeactSandbox.credential.';
/** The stored secrets' names (SecretStorage cannot list its keys) and the generation, in globalState. */
const NAMES_KEY = 'codeactSandbox.credentialNames';
const GENERATION_KEY = 'codeactSandbox.credentialGeneration';

export class CredentialVault implements CredentialValues {
  private standIns: Record<string, string> = {};

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly state: vscode.Memento,
  ) {}

  /** Random, changed with every store or delete: a sandbox made before a change is replaced at the next call. */
  get generation(): string {
    return this.state.get<string>(GENERATION_KEY) ?? 'none';
  }

  read(secret: string): Promise<string | undefined> {
    return Promise.resolve(this.secrets.get(SECRET_PREFIX + secret));
  }

  names(): string[] {
    return [...(this.state.get<string[]>(NAMES_KEY) ?? [])].sort();
  }

  async store(secret: string, value: string): Promise<void> {
    await this.secrets.store(SECRET_PREFIX + secret, value);
    await this.state.update(NAMES_KEY, [...new Set([...this.names(), secret])]);
    await this.state.update(GENERATION_KEY, randomBytes(8).toString('hex'));
  }

  async delete(secret: string): Promise<void> {
    await this.secrets.delete(SECRET_PREFIX + secret);
    await this.state.update(NAMES_KEY, this.names().filter((n) => n !== secret));
    await this.state.update(GENERATION_KEY, randomBytes(8).toString('hex'));
  }

  /** A sandbox's credentials for `bindings` (already checked against the allow-list); stand-ins stay the same for the window. */
  sandboxCredentials(bindings: readonly CredentialBinding[]): SandboxCredentials | undefined {
    if (bindings.length === 0) return undefined;
    this.standIns = standInsFor(bindings, this.standIns);
    return { bindings, standIns: { ...this.standIns }, values: this };
  }
}

/** The user's own bindings, as written (the global value alone). */
function userBindings(): WrittenBinding[] {
  const value = vscode.workspace.getConfiguration(CONFIG_SECTION).inspect<WrittenBinding[]>('credentials')?.globalValue;
  return Array.isArray(value) ? value : [];
}

async function writeUserBindings(bindings: WrittenBinding[]): Promise<void> {
  await vscode.workspace.getConfiguration(CONFIG_SECTION).update('credentials', bindings, vscode.ConfigurationTarget.Global);
}

const SENDS = [
  { label: 'Authorization: Bearer <secret>', as: 'bearer' },
  { label: 'Authorization: Basic (the secret is user:password)', as: 'basic' },
  { label: 'A header of its own (such as X-Api-Key)', as: 'header' },
  { label: 'A query parameter (such as ?key=...)', as: 'query' },
] as const;

export function credentialCommands(vault: CredentialVault, log: Logger): CommandTable<typeof COMMAND.addCredential | typeof COMMAND.listCredentials | typeof COMMAND.removeCredential> {
  return {
    [COMMAND.addCredential]: async () => {
      const secret = await vscode.window.showInputBox({
        title: 'CodeAct Sandbox: Add Credential (1/4)',
        prompt: "A name for the secret (the record and the settings say this name, never the value)",
        validateInput: (v) => (SECRET_NAME.test(v) ? undefined : 'Letters, digits, ".", "_" and "-", starting with a letter or digit'),
      });
      if (!secret) return;
      const value = await vscode.window.showInputBox({
        title: 'CodeAct Sandbox: Add Credential (2/4)',
        prompt: `The value of ${secret}: kept in VS Code's secret storage, and given only to the sandbox's network proxy`,
        password: true,
        validateInput: (v) => valueProblem(v) && `The value ${valueProblem(v)}`,
      });
      if (!value) return;
      const hosts = await vscode.window.showInputBox({
        title: 'CodeAct Sandbox: Add Credential (3/4)',
        prompt: 'The hosts it is sent to, comma-separated (api.example.com, *.example.com); they must be on codeactSandbox.network.allow',
        validateInput: (v) => {
          const bad = v.split(',').map((h) => h.trim()).find((h) => patternProblem(h) !== undefined);
          return bad === undefined ? undefined : `${JSON.stringify(bad)} ${patternProblem(bad)}`;
        },
      });
      if (!hosts) return;
      const send = await vscode.window.showQuickPick(SENDS, { title: 'CodeAct Sandbox: Add Credential (4/4)', placeHolder: 'How the proxy sends it' });
      if (!send) return;
      let name: string | undefined;
      if (send.as === 'header' || send.as === 'query') {
        name = await vscode.window.showInputBox({ title: `CodeAct Sandbox: Add Credential: the ${send.as === 'header' ? 'header' : 'parameter'}'s name`, value: send.as === 'header' ? 'X-Api-Key' : 'key' });
        if (!name) return;
      }
      const written: WrittenBinding = { secret, hosts: hosts.split(',').map((h) => h.trim()), as: send.as, ...(name ? { name } : {}) };
      const checked = parseBindings([written], 'the new binding');
      if (checked.problems.length) {
        void vscode.window.showErrorMessage(`CodeAct Sandbox: ${checked.problems[0]}`);
        return;
      }
      await vault.store(secret, value);
      await writeUserBindings([...userBindings().filter((b) => b.secret !== secret), written]);
      log.info(`credential ${secret} stored and bound to ${checked.bindings[0]!.hosts.join(', ')} (its paths and methods can be narrowed in the user settings)`);
      void vscode.window.showInformationMessage(`CodeAct Sandbox: ${secret} is added for ${checked.bindings[0]!.hosts.join(', ')} from the next call on.`);
    },
    [COMMAND.listCredentials]: async () => {
      const bindings = userBindings();
      const items = vault.names().map((n) => {
        const hosts = bindings.filter((b) => b.secret === n).flatMap((b) => (Array.isArray(b.hosts) ? b.hosts : []));
        return { label: n, description: hosts.length ? `sent to ${hosts.join(', ')}` : 'not bound to any host' };
      });
      const unstored = [...new Set(bindings.map((b) => b.secret).filter((s): s is string => typeof s === 'string' && !vault.names().includes(s)))];
      for (const s of unstored) items.push({ label: s, description: 'bound, but no value is stored' });
      await vscode.window.showQuickPick(items.length ? items : [{ label: 'No credentials', description: 'CodeAct Sandbox: Add Credential stores one' }], { title: 'CodeAct Sandbox credentials (names only)' });
    },
    [COMMAND.removeCredential]: async () => {
      const pick = await vscode.window.showQuickPick(vault.names(), { title: 'CodeAct Sandbox: Remove Credential', placeHolder: 'Its value and its bindings go; the next call has neither' });
      if (!pick) return;
      await vault.delete(pick);
      await writeUserBindings(userBindings().filter((b) => b.secret !== pick));
      log.info(`credential ${pick} removed with its bindings`);
    },
  };
}
