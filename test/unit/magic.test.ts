import * as assert from 'node:assert/strict';
import { SNIFF_BYTES, sniffImageType } from '../../src/core/files/magic';

const bytes = (...parts: (number[] | string)[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));

describe('image type by magic bytes (unit)', () => {
  it('needs at most SNIFF_BYTES bytes', () => {
    assert.equal(SNIFF_BYTES, 12);
  });

  it('recognizes PNG, JPEG, GIF and WebP', () => {
    assert.equal(sniffImageType(bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d])), 'image/png');
    assert.equal(sniffImageType(bytes([0xff, 0xd8, 0xff, 0xe0])), 'image/jpeg');
    assert.equal(sniffImageType(bytes([0xff, 0xd8, 0xff])), 'image/jpeg');
    assert.equal(sniffImageType(bytes('GIF87a')), 'image/gif');
    assert.equal(sniffImageType(bytes('GIF89a', [1, 0])), 'image/gif');
    assert.equal(sniffImageType(bytes('RIFF', [0x24, 0, 0, 0], 'WEBP')), 'image/webp');
  });

  it('refuses truncated or near-miss signatures', () => {
    assert.equal(sniffImageType(Buffer.alloc(0)), undefined);
    assert.equal(sniffImageType(bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a])), undefined);
    assert.equal(sniffImageType(bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0b])), undefined);
    assert.equal(sniffImageType(bytes([0xff, 0xd8])), undefined);
    assert.equal(sniffImageType(bytes('GIF88a')), undefined);
    assert.equal(sniffImageType(bytes('RIFF', [0, 0, 0, 0], 'WAVE')), undefined);
    assert.equal(sniffImageType(bytes('RIFF', [0, 0, 0, 0], 'WEB')), undefined);
  });

  it('never calls SVG, HTML or text an image, whatever its name claims', () => {
    assert.equal(sniffImageType(bytes('<svg xmlns="http://www.w3.org/2000/svg"><script>')), undefined);
    assert.equal(sniffImageType(bytes('<?xml version="1.0"?><svg')), undefined);
    assert.equal(sniffImageType(bytes('<!DOCTYPE html>')), undefined);
    assert.equal(sniffImageType(bytes('image/png')), undefined);
  });

  it('ignores what follows the signature', () => {
    assert.equal(sniffImageType(bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], '<script>alert(1)</script>')), 'image/png');
  });
});
