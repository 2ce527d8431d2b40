import * as assert from 'node:assert/strict';
import { globMatcher, globToRegExp, matchesGlob } from '../../src/core/files/glob';

describe('glob matcher (unit)', () => {
  it('compiles to anchored regular expressions', () => {
    assert.equal(globToRegExp('*.pem').source, '^[^/]*\\.pem$');
    assert.equal(globToRegExp('a?c').source, '^a[^/]c$');
    // RegExp#source escapes '/'.
    assert.equal(globToRegExp('**/.env').source, '^(?:.*\\/)?\\.env$');
    assert.equal(globToRegExp('a/**/b').source, '^a(?:\\/.*)?\\/b$');
    assert.equal(globToRegExp('**/.git/**').source, '^(?:.*\\/)?\\.git(?:\\/.*)?$');
    assert.equal(globToRegExp('**').source, '^.*$');
    assert.equal(globToRegExp('a/**').source, '^a(?:\\/.*)?$');
    assert.equal(globToRegExp('*.pem', { ignoreCase: true }).flags, 'is');
  });

  it('`*` matches within one segment only, the empty run included', () => {
    assert.equal(matchesGlob('server.pem', '*.pem'), true);
    assert.equal(matchesGlob('.pem', '*.pem'), true);
    assert.equal(matchesGlob('certs/server.pem', '*.pem'), false);
    assert.equal(matchesGlob('a/b', 'a*b'), false);
    assert.equal(matchesGlob('a-b', 'a*b'), true);
  });

  it('`?` matches exactly one character, never a separator', () => {
    assert.equal(matchesGlob('abc', 'a?c'), true);
    assert.equal(matchesGlob('ac', 'a?c'), false);
    assert.equal(matchesGlob('abbc', 'a?c'), false);
    assert.equal(matchesGlob('a/c', 'a?c'), false);
  });

  it('a leading `**/` matches zero or more whole folders', () => {
    assert.equal(matchesGlob('.env', '**/.env'), true);
    assert.equal(matchesGlob('app/.env', '**/.env'), true);
    assert.equal(matchesGlob('a/b/c/.env', '**/.env'), true);
    assert.equal(matchesGlob('a.env', '**/.env'), false);
    assert.equal(matchesGlob('x/a.env', '**/.env'), false);
    assert.equal(matchesGlob('.env/x', '**/.env'), false);
  });

  it('a middle `**` matches zero or more folders between fixed ones', () => {
    assert.equal(matchesGlob('a/b', 'a/**/b'), true);
    assert.equal(matchesGlob('a/x/b', 'a/**/b'), true);
    assert.equal(matchesGlob('a/x/y/b', 'a/**/b'), true);
    assert.equal(matchesGlob('a/xb', 'a/**/b'), false);
    assert.equal(matchesGlob('ab', 'a/**/b'), false);
    assert.equal(matchesGlob('a/x/bb', 'a/**/b'), false);
  });

  it('a trailing `/**` matches everything below the folder, and the folder name itself', () => {
    assert.equal(matchesGlob('.git/config', '**/.git/**'), true);
    assert.equal(matchesGlob('sub/.git/objects/ab/cd', '**/.git/**'), true);
    assert.equal(matchesGlob('sub/.git', '**/.git/**'), true);
    assert.equal(matchesGlob('.gitignore', '**/.git/**'), false);
    assert.equal(matchesGlob('x.git/config', '**/.git/**'), false);
  });

  it('repeated `**` segments mean one', () => {
    assert.equal(globToRegExp('**/**/a').source, globToRegExp('**/a').source);
    assert.equal(matchesGlob('a', '**/**/a'), true);
    assert.equal(matchesGlob('x/y/a', '**/**/a'), true);
  });

  it('regular-expression characters in a pattern are literal', () => {
    assert.equal(matchesGlob('a+b(1).txt', 'a+b(1).txt'), true);
    assert.equal(matchesGlob('aab(1)xtxt', 'a+b(1).txt'), false);
    assert.equal(matchesGlob('$x^[y]{z}|w\\', '$x^[y]{z}|w\\'), true);
    assert.equal(matchesGlob('xyz', '[xy]yz'), false);
  });

  it('is case-sensitive unless asked otherwise', () => {
    assert.equal(matchesGlob('A.PEM', '*.pem'), false);
    assert.equal(matchesGlob('A.PEM', '*.pem', { ignoreCase: true }), true);
    assert.equal(matchesGlob('SUB/.GIT/HEAD', '**/.git/**', { ignoreCase: true }), true);
  });

  it('a compiled list returns the first pattern that matches', () => {
    const match = globMatcher(['**/*.key', '**/id_rsa*', '**/*']);
    assert.equal(match('a/b.key'), '**/*.key');
    assert.equal(match('id_rsa.pub'), '**/id_rsa*');
    assert.equal(match('readme.md'), '**/*');
    assert.equal(globMatcher(['*.key'])('readme.md'), undefined);
    assert.equal(globMatcher([])('anything'), undefined);
  });
});
