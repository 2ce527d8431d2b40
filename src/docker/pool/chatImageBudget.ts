/**
 * Which chats' prepared images go, across the chats of one store (one workspace's records): an
 * image is a saving (its chat's next sandbox need not install again), never needed, so the disk
 * it holds is bounded and it is not kept for a chat nobody comes back to. A chat whose image goes
 * is as one that never had one: its next sandbox is made from the configured image, and re-running
 * its kept calls installs its packages again.
 */

/** All chat images of one store together, by what their packages take (chatSite.ts's diskBytes). */
export const MAX_CHAT_IMAGES_BYTES = 4 * 1024 ** 3;
/**
 * An image not used for this long goes. A month: a chat put aside for a few weeks comes back to
 * its packages; one left longer rarely comes back, and if it does, installing again costs it a
 * replay, while an image kept for it holds disk the whole time.
 */
export const CHAT_IMAGE_UNUSED_MS = 30 * 24 * 60 * 60 * 1000;

export interface BudgetedImage {
  session: string;
  /** What its packages take; undefined: made before the bytes were counted (and before only packages were kept). */
  bytes: number | undefined;
  /** Its last use: built, a sandbox made from it, or a call of its chat (ms since the epoch). */
  lastUsed: number;
}

/** earlier: made before the bytes were counted; unused: not used for unusedMs; total: the least recently used over totalBytes. */
export type DropReason = 'earlier' | 'unused' | 'total';

export interface BudgetLimits {
  totalBytes: number;
  unusedMs: number;
}

/**
 * The images to remove and why: those made before the bytes were counted; those unused for
 * `unusedMs`; then, while the rest take more than `totalBytes`, the least recently used.
 */
export function imagesToDrop(images: readonly BudgetedImage[], now: number, limits: BudgetLimits): { session: string; why: DropReason }[] {
  const drop: { session: string; why: DropReason }[] = [];
  const kept: (BudgetedImage & { bytes: number })[] = [];
  for (const i of images) {
    if (i.bytes === undefined) drop.push({ session: i.session, why: 'earlier' });
    else if (now - i.lastUsed >= limits.unusedMs) drop.push({ session: i.session, why: 'unused' });
    else kept.push({ ...i, bytes: i.bytes });
  }
  // Oldest use first; the session orders equal times, so every process decides alike.
  kept.sort((a, b) => a.lastUsed - b.lastUsed || (a.session < b.session ? -1 : a.session > b.session ? 1 : 0));
  let total = kept.reduce((sum, i) => sum + i.bytes, 0);
  for (const i of kept) {
    if (total <= limits.totalBytes) break;
    drop.push({ session: i.session, why: 'total' });
    total -= i.bytes;
  }
  return drop;
}
