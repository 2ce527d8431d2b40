import { ToolError } from '../../core/errors';
import type { Entry } from './lease';

/** What the model reads on the next call of a chat whose idle sandbox made room for another. */
export function evictedNote(maxSandboxes: number): string {
  return `This chat's sandbox was removed to make room for other chats (at most ${maxSandboxes} sandboxes are kept at once), so files written by earlier calls are gone.`;
}

/** The session whose sandbox no call holds and that was used longest ago, if any. */
export function leastRecentlyUsedIdle(entries: Iterable<[string, Entry]>): [string, Entry] | undefined {
  let best: [string, Entry] | undefined;
  for (const [key, entry] of entries) {
    if (entry.leases > 0 || entry.retired) continue;
    if (!best || entry.sandbox.lastUsed < best[1].sandbox.lastUsed) best = [key, entry];
  }
  return best;
}

/**
 * Calls waiting for room under the maximum: woken whenever a sandbox goes or a call ends (then
 * each looks again), or cancelled by their own signal.
 */
export class RoomWaiters {
  private readonly waiters = new Set<() => void>();

  get size(): number {
    return this.waiters.size;
  }

  notify(): void {
    const all = [...this.waiters];
    this.waiters.clear();
    for (const w of all) w();
  }

  wait(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const wake = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        this.waiters.delete(wake);
        reject(new ToolError('cancelled', 'The run was cancelled while it waited for a free sandbox.'));
      };
      if (signal.aborted) return onAbort();
      this.waiters.add(wake);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
