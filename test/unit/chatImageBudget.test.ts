import * as assert from 'node:assert/strict';
import { CHAT_IMAGE_UNUSED_MS, MAX_CHAT_IMAGES_BYTES, imagesToDrop } from '../../src/docker/pool/chatImageBudget';

const DAY = 24 * 60 * 60 * 1000;
const NOW = Date.parse('2026-06-01T00:00:00Z');
const limits = { totalBytes: 100, unusedMs: 30 * DAY };

describe('the chats prepared images: which go (unit)', () => {
  it('keeps every image within the total and used within the time', () => {
    const images = [
      { session: 'a', bytes: 40, lastUsed: NOW - 29 * DAY },
      { session: 'b', bytes: 60, lastUsed: NOW },
    ];
    assert.deepEqual(imagesToDrop(images, NOW, limits), []);
  });

  it('drops the least recently used until the rest are within the total, whatever their sizes', () => {
    const images = [
      { session: 'newest', bytes: 30, lastUsed: NOW - 1 },
      { session: 'middle', bytes: 70, lastUsed: NOW - 2 },
      { session: 'oldest', bytes: 10, lastUsed: NOW - 3 },
    ];
    // 110 > 100: the oldest goes first (100 left, within); a smaller newer one is never taken instead.
    assert.deepEqual(imagesToDrop(images, NOW, limits), [{ session: 'oldest', why: 'total' }]);
    assert.deepEqual(imagesToDrop(images, NOW, { ...limits, totalBytes: 99 }), [
      { session: 'oldest', why: 'total' },
      { session: 'middle', why: 'total' },
    ]);
  });

  it('drops an image unused for the time, and one made before bytes were counted, before counting the rest', () => {
    const images = [
      { session: 'stale', bytes: 10, lastUsed: NOW - 30 * DAY },
      { session: 'old-rule', bytes: undefined, lastUsed: NOW },
      { session: 'fresh', bytes: 100, lastUsed: NOW - 30 * DAY + 1 },
    ];
    assert.deepEqual(imagesToDrop(images, NOW, limits), [
      { session: 'stale', why: 'unused' },
      { session: 'old-rule', why: 'earlier' },
    ]);
  });

  it('orders images used at the same time by their session, so every window drops the same', () => {
    const images = [
      { session: 'b', bytes: 60, lastUsed: NOW },
      { session: 'a', bytes: 60, lastUsed: NOW },
    ];
    assert.deepEqual(imagesToDrop(images, NOW, limits), [{ session: 'a', why: 'total' }]);
  });

  it('holds 4 GiB of all chats together, and a month unused', () => {
    assert.equal(MAX_CHAT_IMAGES_BYTES, 4 * 1024 ** 3);
    assert.equal(CHAT_IMAGE_UNUSED_MS, 30 * DAY);
  });
});
