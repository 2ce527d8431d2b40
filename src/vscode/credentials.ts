/**
 * The person's credentials in VS Code: values in SecretStorage (the OS keychain), bindings in the
 * user's own settings (`codeactSandbox.credentials`, application scope; a workspace's value is
 * ignored, config.ts). Commands add one (value, hosts, how it is sent), list them by name, and
 * remove one. A value is read only when a sandbox's proxy starts, and goes to it alone.
 */
import { randomBytes } from 'node:crypto';
import { SECRET_NAME, parseBindings, standInsFor, valueProblem, type CredentialBinding, type CredentialValues, type SandboxCredentials, type WrittenBinding } from '../core/credentials';
import { patternProblem } from '../core/network';
import type { Logger } from '../core/logger';
import { credentialsOf, networkOf, type Settings } from '../core/settings';
import type { CommandTable } from './commands';
import { COMMAND, CONFIG_SECTION } from './ids';
import { ACTION, type Ui, type WorkspaceEnv, type WorkspaceState } from './ui';

const SECRET_PREFIX = 'codeactSandbox.credential.';
/** The stored secrets' names (SecretStorage cannot list its keys) and the generation, in globalState. */
const NAMES_KEY = 'codeactSandbox.credentialNames';
const GENERATION_KEY = 'codeactSandbox.credentialGeneration';
const BINDINGS_SETTING = `${CONFIG_SECTION}.credentials`;

/** The part of VS Code's SecretStorage the vault uses (the OS keychain). */
export interface SecretStore {
  get(key: string): PromiseLike<string | undefined>;
  store(key: string, value: string): PromiseLike<void>;
  delete(key: string): PromiseLike<void>;
}

export class CredentialVault implements CredentialValues {
  private standIns: Record<string, string> = {};

  constructor(
    private readonly secrets: SecretStore,
    private readonly state: WorkspaceState,
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

const SENDS = [
  { label: 'Authorization: Bearer <secret>', as: 'bearer' },
  { label: 'Authorization: Basic (the secret is user:password)', as: 'basic' },
  { label: 'A header of its own (such as X-Api-Key)', as: 'header' },
  { label: 'A query parameter (such as ?key=...)', as: 'query' },
] as const;

export interface CredentialDeps {
  vault: CredentialVault;
  ui: Pick<Ui, 'askText' | 'pick' | 'showInfo' | 'showWarning' | 'showError' | 'updateUserSetting'>;
  workspace: Pick<WorkspaceEnv, 'configuration'>;
  /** The settings now (the allow-list a new binding's hosts are checked against). */
  settings: () => Settings;
  log: Logger;
}

/**
 * Add, List and Remove Credential. The value is asked in a password box and goes to SecretStorage
 * alone; the binding is written to the user's settings (a workspace's is never read). Nothing
 * shown or logged holds a value.
 */
export function credentialCommands({ vault, ui, workspace, settings, log }: CredentialDeps): CommandTable<typeof COMMAND.addCredential | typeof COMMAND.listCredentials | typeof COMMAND.removeCredential> {
  /** The user's own bindings, as written (the global value alone). */
  const userBindings = (): WrittenBinding[] => {
    const value = workspace.configuration().inspect('credentials')?.globalValue;
    return Array.isArray(value) ? (value as WrittenBinding[]) : [];
  };
  const writeUserBindings = (change: (bindings: WrittenBinding[]) => WrittenBinding[]): Promise<void> =>
    ui.updateUserSetting(BINDINGS_SETTING, (current) => change(Array.isArray(current) ? (current as WrittenBinding[]) : []));

  return {
    [COMMAND.addCredential]: async () => {
      const secret = await ui.askText({
        title: 'CodeAct Sandbox: Add Credential (1/4)',
        prompt: 'A name for the secret (the record and the settings say this name, never the value)',
        check: (v) => (SECRET_NAME.test(v) ? undefined : 'Letters, digits, ".", "_" and "-", starting with a letter or digit'),
      });
      if (!secret) return;
      const value = await ui.askText({
        title: 'CodeAct Sandbox: Add Credential (2/4)',
        prompt: `The value of ${secret}: kept in VS Code's secret storage, and given only to the sandbox's network proxy`,
        password: true,
        check: (v) => {
          const problem = valueProblem(v);
          return problem && `The value ${problem}`;
        },
      });
      if (!value) return;
      const hosts = await ui.askText({
        title: 'CodeAct Sandbox: Add Credential (3/4)',
        prompt: `The hosts it is sent to, comma-separated (api.example.com, *.example.com); they must be on ${CONFIG_SECTION}.network.allow`,
        check: (v) => {
          const bad = v.split(',').map((h) => h.trim()).find((h) => patternProblem(h) !== undefined);
          return bad === undefined ? undefined : `${JSON.stringify(bad)} ${patternProblem(bad)}`;
        },
      });
      if (!hosts) return;
      const send = await ui.pick(SENDS, { title: 'CodeAct Sandbox: Add Credential (4/4)', placeHolder: 'How the proxy sends it' });
      if (!send) return;
      let name: string | undefined;
      if (send.as === 'header' || send.as === 'query') {
        name = await ui.askText({ title: `CodeAct Sandbox: Add Credential: the ${send.as === 'header' ? 'header' : 'parameter'}'s name`, value: send.as === 'header' ? 'X-Api-Key' : 'key' });
        if (!name) return;
      }
      const written: WrittenBinding = { secret, hosts: hosts.split(',').map((h) => h.trim()), as: send.as, ...(name ? { name } : {}) };
      const checked = parseBindings([written], 'the new binding');
      if (checked.problems.length) {
        ui.showError(`CodeAct Sandbox: ${checked.problems[0]}`);
        return;
      }
      await vault.store(secret, value);
      await writeUserBindings((bindings) => [...bindings.filter((b) => b.secret !== secret), written]);
      const bound = checked.bindings[0]!.hosts.join(', ');
      log.info(`credential ${secret} stored and bound to ${bound} (its paths and methods can be narrowed in the user settings)`);
      // A host the allow-list does not let programs reach would leave the credential unused: say so now, not at the next call.
      const now = settings();
      const unreachable = credentialsOf({ credentials: [{ ...written }] }, networkOf(now).policy).problems;
      if (unreachable.length) {
        ui.showWarning(`CodeAct Sandbox: ${secret} is stored. ${unreachable[0]} Allow its hosts there to have it sent.`, ACTION.openSetting(`${CONFIG_SECTION}.network.allow`));
        return;
      }
      ui.showInfo(`CodeAct Sandbox: ${secret} is added for ${bound} from the next call on.`);
    },
    [COMMAND.listCredentials]: async () => {
      const bindings = userBindings();
      const names = vault.names();
      const items = names.map((n) => {
        const hosts = bindings.filter((b) => b.secret === n).flatMap((b) => (Array.isArray(b.hosts) ? b.hosts : []));
        return { label: n, description: hosts.length ? `sent to ${hosts.join(', ')}` : 'not bound to any host' };
      });
      const unstored = [...new Set(bindings.map((b) => b.secret).filter((s): s is string => typeof s === 'string' && !names.includes(s)))];
      for (const s of unstored) items.push({ label: s, description: 'bound, but no value is stored' });
      await ui.pick(items.length ? items : [{ label: 'No credentials', description: 'CodeAct Sandbox: Add Credential stores one' }], { title: 'CodeAct Sandbox credentials (names only)' });
    },
    [COMMAND.removeCredential]: async () => {
      const pick = await ui.pick(
        vault.names().map((label) => ({ label })),
        { title: 'CodeAct Sandbox: Remove Credential', placeHolder: 'Its value and its bindings go; the next call has neither' },
      );
      if (!pick) return;
      await vault.delete(pick.label);
      await writeUserBindings((bindings) => bindings.filter((b) => b.secret !== pick.label));
      log.info(`credential ${pick.label} removed with its bindings`);
      ui.showInfo(`CodeAct Sandbox: ${pick.label} is removed; the next call has neither its value nor its bindings.`);
    },
  };
}
