import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { RootsListChangedNotificationSchema, type Root } from '@modelcontextprotocol/sdk/types.js';
import { describeError } from '../core/errors';
import type { Logger } from '../core/logger';
import type { NamedFolder } from '../storage/workspaceFolders';

/** A client that does not answer roots/list must not hold up a call for long. */
const ROOTS_TIMEOUT_MS = 10_000;

/**
 * The folders among the client's roots: file:// URIs of folders that exist here (a client may
 * offer other schemes, or folders of another machine). Each is named by the root's name when that
 * is one plain path segment, else by the folder's base name; a repeated name gets a suffix, so
 * every folder stays reachable under a name of its own.
 */
export function rootFolders(roots: readonly Root[], log: Logger): NamedFolder[] {
  const folders: NamedFolder[] = [];
  const taken = new Set<string>();
  for (const root of roots) {
    let folder: string;
    try {
      folder = fileURLToPath(root.uri);
    } catch {
      log.info(`root ${root.uri} is not a local file URI; it is not shared`);
      continue;
    }
    if (!fs.statSync(folder, { throwIfNoEntry: false })?.isDirectory()) {
      log.info(`root ${folder} is not a folder here; it is not shared`);
      continue;
    }
    const base = plainSegment(root.name) ?? plainSegment(path.basename(folder)) ?? 'root';
    let name = base;
    for (let i = 2; taken.has(name); i++) name = `${base}-${i}`;
    taken.add(name);
    folders.push({ name, path: folder });
  }
  return folders;
}

function plainSegment(name: string | undefined): string | undefined {
  return name && !/[/\\\0]/.test(name) && name !== '.' && name !== '..' ? name : undefined;
}

/**
 * The client's roots as folders: asked when first needed, and again after the client says they
 * changed (notifications/roots/list_changed). None when the client does not offer roots.
 */
export class ClientRoots {
  private pending: Promise<NamedFolder[]> | undefined;
  private latest: NamedFolder[] = [];

  constructor(
    private readonly server: Server,
    private readonly log: Logger,
  ) {
    server.setNotificationHandler(RootsListChangedNotificationSchema, () => {
      this.pending = undefined;
    });
  }

  /** The folders of the latest answer, without asking (for the Dev Container backend). */
  get known(): readonly NamedFolder[] {
    return this.latest;
  }

  async folders(): Promise<NamedFolder[]> {
    if (!this.server.getClientCapabilities()?.roots) return [];
    const asked = (this.pending ??= this.server.listRoots(undefined, { timeout: ROOTS_TIMEOUT_MS }).then(
      (r) => rootFolders(r.roots, this.log),
      (e: unknown) => {
        this.log.warn(`the client did not list its roots, so no workspace files can be shared: ${describeError(e)}`);
        // Ask again at the next call rather than keep a failure.
        if (this.pending === asked) this.pending = undefined;
        return [];
      },
    ));
    this.latest = await asked;
    return this.latest;
  }
}
