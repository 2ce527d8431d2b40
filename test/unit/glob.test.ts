import * as assert from 'node:assert/strict';
import { globMatcher, matchesGlob } from '../../src/core/files/glob';

describe('glob matcher (unit)', () => {
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
    // Also when the folder's own segment is itself a glob.
    assert.equal(matchesGlob('ab', 'a*/**'), true);
    assert.equal(matchesGlob('x/.terraform', '**/.terraform*/**'), true);
    assert.equal(matchesGlob('x/.terraformrc', '**/.terraform/**'), false);
  });

  it('repeated `**` segments mean one', () => {
    assert.equal(matchesGlob('a', '**/**/a'), true);
    assert.equal(matchesGlob('x/y/a', '**/**/a'), true);
  });

  it('`**` inside a segment is a `*`: it never crosses a folder', () => {
    assert.equal(matchesGlob('a-b', 'a**b'), true);
    assert.equal(matchesGlob('a/b', 'a**b'), false);
    assert.equal(matchesGlob('x/.env', '**.env'), false);
  });

  it('regular-expression characters, brackets, braces, extglobs and negation are literal', () => {
    assert.equal(matchesGlob('a+b(1).txt', 'a+b(1).txt'), true);
    assert.equal(matchesGlob('aab(1)xtxt', 'a+b(1).txt'), false);
    assert.equal(matchesGlob('$x^[y]{z}|w', '$x^[y]{z}|w'), true);
    assert.equal(matchesGlob('xyz', '[xy]yz'), false);
    assert.equal(matchesGlob('[xy]yz', '[xy]yz'), true);
    assert.equal(matchesGlob('pages/[id].tsx', '**/[id].tsx'), true);
    assert.equal(matchesGlob('a.pem', '*.{pem,key}'), false);
    assert.equal(matchesGlob('x.{pem,key}', '*.{pem,key}'), true);
    assert.equal(matchesGlob('a', '@(a)'), false);
    assert.equal(matchesGlob('+(a)', '+(a)'), true);
    assert.equal(matchesGlob('b', '!a'), false);
    assert.equal(matchesGlob('!a', '!a'), true);
    assert.equal(matchesGlob('aaa', 'a{1,3}'), false);
  });

  it('a name is matched by the pattern, never by equalling its text', () => {
    assert.equal(matchesGlob('\\$', '$'), false);
    assert.equal(matchesGlob('\\.env', '.env'), false);
  });

  it('a backslash is a folder separator and a leading ./ is dropped', () => {
    assert.equal(matchesGlob('secrets/a.txt', 'secrets\\*.txt'), true);
    assert.equal(matchesGlob('a/b/.env', '**\\.env'), true);
    assert.equal(matchesGlob('.env', './.env'), true);
    assert.equal(matchesGlob('x/.env', './.env'), false);
    // These compiled slowly or wrongly in picomatch when escaped; here they are plain separators.
    assert.equal(matchesGlob('(/x', '(\\\\x'), false);
    assert.equal(matchesGlob('(/x', '(\\x'), true);
  });

  it('a line break in a name does not end it', () => {
    assert.equal(matchesGlob('a\nb/c', '**'), true);
    assert.equal(matchesGlob('a\nb/.git/x', '**/.git/**'), true);
    assert.equal(matchesGlob('x\nsecret', '*secret*'), true);
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
