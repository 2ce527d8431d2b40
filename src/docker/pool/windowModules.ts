import { DEFAULTS } from '../../core/limits';
import type { SandboxSpec } from '../container';

/**
 * What the programs of this process's chats imported of the preload list (each time a runner
 * started over to preload it). With preloading on first use a sandbox starts small, so a new chat's
 * first pandas call would pay for the import; a window whose chats work with pandas is likely to
 * go on doing so. The sandboxes made ahead of a chat (spares, and the one a chat about to call
 * gets) therefore preload at once what this window's chats used. Only ever grows: a window that
 * used pandas once keeps its spares ready for it.
 */
export class WindowModules {
  private readonly seen = new Set<string>();

  /** Adds what a sandbox's runner learned of `spec`'s list; true when any of it is new to the window. */
  note(learned: Iterable<string> | undefined, spec: SandboxSpec): boolean {
    const list = spec.preloadModules ?? DEFAULTS.preloadModules;
    const before = this.seen.size;
    for (const m of learned ?? []) if (list.includes(m)) this.seen.add(m);
    return this.seen.size > before;
  }

  /** `spec` for a sandbox made ahead of a chat: what the window used, of the list, preloaded at its start. */
  ahead(spec: SandboxSpec): SandboxSpec {
    const preloadAhead = this.wanted(spec);
    return preloadAhead.length > 0 ? { ...spec, preloadAhead } : spec;
  }

  /** Whether a sandbox made for `spec` lacks something the window would preload now. */
  behind(spec: SandboxSpec): boolean {
    const has = spec.preloadAhead ?? [];
    return this.wanted(spec).some((m) => !has.includes(m));
  }

  private wanted(spec: SandboxSpec): string[] {
    if (spec.warmRunner === false || (spec.preloadWhen ?? DEFAULTS.preloadWhen) !== 'used') return [];
    return (spec.preloadModules ?? DEFAULTS.preloadModules).filter((m) => this.seen.has(m));
  }
}
