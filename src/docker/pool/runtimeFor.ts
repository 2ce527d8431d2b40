/**
 * Which runtime a sandbox of a spec runs under on the provider's engine: the engine asked only what
 * it must be (its identity, Podman's limits, its runtimes), each once per process and client.
 */
import {
  checkPodmanLimits,
  chooseRuntime,
  engineFailure,
  engineIdentity,
  engineRefused,
  engineRuntimes,
  isEngineFailure,
  isGvisor,
  statusCode,
  type RuntimeChoice,
} from '../engine';
import { ToolError } from '../../core/errors';
import { logPodmanDifferences, runtimeFromLabels, type SandboxSpec } from '../container';
import type { ProviderOptions } from './providerOptions';

/** An engine question whose failure is said as the engine's (not answering, or refusing `what`). */
function ask<T>(docker: ProviderOptions['docker'], question: Promise<T>, what: string): Promise<T> {
  return question.catch((e: unknown) => {
    if (isEngineFailure(e)) throw engineFailure(e, docker);
    throw statusCode(e) !== undefined ? engineRefused(e, docker, what) : e;
  });
}

/**
 * The runtime of a kept sandbox whose `labels` say what it was made under: as recorded, when it
 * was made for the same runtime setting (the engine is only pinged); else as for a new sandbox.
 */
export async function keptRuntime(options: ProviderOptions, spec: SandboxSpec, labels: Record<string, string> | undefined): Promise<RuntimeChoice> {
  const engine = await ask(options.docker, engineIdentity(options.docker), 'a ping');
  const kept = runtimeFromLabels(labels, spec.runtime, engine.kind);
  // A kept session is held to the same rule as a new sandbox: no allow-list under gVisor.
  if (kept && spec.network && isGvisor(kept.name)) throw gvisorWithAllowList(kept, options.runtimeSettingHint ?? 'the runtime setting');
  return kept ?? runtimeFor(options, spec);
}

export async function runtimeFor(options: ProviderOptions, spec: SandboxSpec, logChoice = false): Promise<RuntimeChoice> {
  const { docker, log } = options;
  // Each question once per process (cached per client), and only those this engine needs: a busy
  // Podman answers one heavy question at a time.
  const engine = await ask(docker, engineIdentity(docker), 'a ping');
  const podman = engine.kind === 'podman' ? await checkPodmanLimits(docker, engine, log) : undefined;
  // Podman's own info names its default runtime; its runtime list matters only for a named runtime.
  const named = spec.runtime !== undefined && spec.runtime !== 'auto';
  const { available, engineDefault, withoutNetwork } =
    podman?.ociRuntime && !named ? { available: [], engineDefault: podman.ociRuntime, withoutNetwork: [] } : await ask(docker, engineRuntimes(docker), 'its runtimes (info)');
  const settingHint = options.runtimeSettingHint ?? 'the runtime setting';
  const runtime = chooseRuntime(spec.runtime, available, engineDefault, settingHint, engine.kind, spec.network !== undefined);
  if (spec.network && withoutNetwork.includes(runtime.name)) throw runtimeWithoutNetwork(runtime, settingHint);
  if (spec.network && engine.kind === 'podman' && isGvisor(runtime.name)) throw podmanGvisorWithAllowList(runtime);
  if (spec.network && isGvisor(runtime.name)) throw gvisorWithAllowList(runtime, settingHint);
  if (logChoice && spec.runtime !== undefined) log.info(`runtime ${runtime.name} (${runtime.reason}); the engine (${engine.label}) has ${available.join(', ') || (podman ? `${engineDefault} as its default` : 'no runtimes listed')}`);
  if (logChoice && engine.kind === 'podman') logPodmanDifferences(log, engine);
  return runtime;
}

/** A network allow-list under a runtime registered without network: refused, never run without the proxy's way out. */
function runtimeWithoutNetwork(runtime: RuntimeChoice, settingHint: string): ToolError {
  return new ToolError(
    'invalid_settings',
    `The sandbox runtime ${runtime.name} is registered with the engine with --network=none, so a sandbox with a network allow-list cannot run under it, and the program was not run. Ask the user to register ${runtime.name} without --network=none (see the README's "Network" section), to set ${settingHint} to runc, or to empty the network allow-list.`,
  );
}

/**
 * gVisor with its own network stack (runsc registered without --network=none) on Docker: the
 * sandbox's packets go through gVisor's stack, not the kernel's, and the allow-list's hostile
 * tests (no peer but the proxy, no route, no DNS, no raw socket) have not been run there. Refused
 * rather than offered unproven; auto picks the engine's default runtime for such a sandbox.
 */
function gvisorWithAllowList(runtime: RuntimeChoice, settingHint: string): ToolError {
  return new ToolError(
    'invalid_settings',
    `A sandbox with a network allow-list does not run under ${runtime.name} (gVisor): its own network stack is not one the allow-list's protections are proven on, so the program was not run. Ask the user to set ${settingHint} to auto or runc for chats that use the network, or to empty the network allow-list.`,
  );
}

/**
 * On Podman the allow-list is enforced by the firewall of the proxy's network namespace, which the
 * sandbox joins (sidecar.ts). gVisor's own network stack sends the sandbox's packets past that
 * firewall, so the allow-list is refused there rather than offered unenforced.
 */
function podmanGvisorWithAllowList(runtime: RuntimeChoice): ToolError {
  return new ToolError(
    'invalid_settings',
    `Podman runs this sandbox under ${runtime.name} (gVisor), whose own network stack would bypass the firewall that holds a sandbox with a network allow-list to its proxy, so the sandbox was not made and the program was not run. Ask the user to make runc or crun Podman's default runtime, to use a Docker engine, or to empty the network allow-list.`,
  );
}
