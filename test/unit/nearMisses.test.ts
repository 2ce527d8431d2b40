import * as assert from 'node:assert/strict';
import { baseName, boundedDistance, nearMisses } from '../../src/core/files/nearMisses';

describe('near misses for unknown file names (unit)', () => {
  it('boundedDistance is Levenshtein with adjacent transpositions', () => {
    assert.equal(boundedDistance('kitten', 'sitting', 5), 3);
    assert.equal(boundedDistance('', '', 2), 0);
    assert.equal(boundedDistance('abc', '', 3), 3);
    assert.equal(boundedDistance('sales.csv', 'slaes.csv', 2), 1);
    assert.equal(boundedDistance('ab', 'ba', 2), 1);
    assert.equal(boundedDistance('abc', 'abc', 0), 0);
  });

  it('boundedDistance stops at max + 1', () => {
    assert.equal(boundedDistance('kitten', 'sitting', 2), 3);
    assert.equal(boundedDistance('a', 'abcdef', 2), 3);
    assert.equal(boundedDistance('abcdef', 'uvwxyz', 1), 2);
  });

  it('baseName is the last segment', () => {
    assert.equal(baseName('a/b/c.txt'), 'c.txt');
    assert.equal(baseName('c.txt'), 'c.txt');
  });

  it('ranks same path in another case, then same base name, then small edits', () => {
    const listing = ['Data/Sales.csv', 'old/data/sales.csv', 'data/sales.tsv', 'data/slaes.csv', 'elsewhere/unrelated.txt', 'data/sales.csv'];
    assert.deepEqual(nearMisses('data/sales.csv', listing), ['Data/Sales.csv', 'old/data/sales.csv', 'data/sales.tsv', 'data/slaes.csv']);
  });

  it('accepts up to 2 edits on the base name or up to 3 on the whole path', () => {
    assert.deepEqual(nearMisses('x/report.csv', ['y/repxrt.cxv']), ['y/repxrt.cxv']);
    assert.deepEqual(nearMisses('x/report.csv', ['y/rexxrt.cxv']), []);
    assert.deepEqual(nearMisses('ab/c.txt', ['abc/d.txt']), ['abc/d.txt']);
  });

  it('never suggests the wanted name itself and honours the limit', () => {
    assert.deepEqual(nearMisses('a.txt', ['a.txt']), []);
    assert.deepEqual(nearMisses('a.txt', ['b.txt', 'c.txt', 'd.txt'], 2), ['b.txt', 'c.txt']);
  });
});
