import * as assert from 'node:assert/strict';
import { domainLists, judge, patternProblem } from '../../../src/core/network/domains';
import { networkPolicy } from '../../../src/core/network/policy';

describe('network allow-list patterns', function () {
  it('takes domains and *.domains, in any case, as ASCII', function () {
    const lists = domainLists(['Index.Example.org', '*.assets.example', 'files.data.example.', 'bücher.example', 'index.example.org'], []);
    assert.deepEqual(
      lists.allow.map((p) => [p.domain, p.subdomains]),
      [
        ['index.example.org', false],
        ['assets.example', true],
        ['files.data.example', false],
        ['xn--bcher-kva.example', false],
      ],
    );
    assert.deepEqual(lists.problems, [
      'network.allow: "bücher.example" is not plain ASCII; it is read as xn--bcher-kva.example. Letters of other scripts can look like ASCII ones: check that this is the domain you meant.',
    ]);
  });

  it('reads no pattern past a character that cuts or changes a name in the IDN step', function () {
    // domainToASCII stops at \\, ? and #: each of these would otherwise be read as evil.com.
    const cut: [string, string][] = [
      ['evil.com\\.index.example.org', 'has "\\\\", which no domain name has'],
      ['*.evil.com#.x.org', 'has "#", which no domain name has'],
      ['evil.com?.index.example.org', 'has "?", which no domain name has'],
      ['user@evil.com', 'has "@", which no domain name has'],
      ['evil.com%2e.x.org', 'has "%", which no domain name has'],
      ['evil_host.example', 'has "_", which no domain name has'],
      // An ideographic full stop is a dot to the IDN step, not to the user reading the setting.
      ['evil。com', 'has "。", which no domain name has'],
    ];
    for (const [raw, why] of cut) assert.equal(patternProblem(raw), why, raw);
    const lists = domainLists(['evil.com\\.index.example.org', 'index.example.org'], []);
    assert.deepEqual(lists.allow.map((p) => p.domain), ['index.example.org']);
    assert.deepEqual(judge(lists, 'evil.com'), { allowed: false, reason: 'not listed' });
    // Full-width letters are read as their ASCII twins, and the user is shown which.
    assert.deepEqual(domainLists(['ｅｖｉｌ.com'], []).problems, [
      'network.allow: "ｅｖｉｌ.com" is not plain ASCII; it is read as evil.com. Letters of other scripts can look like ASCII ones: check that this is the domain you meant.',
    ]);
  });

  it('refuses a wildcard over a public suffix, or over a service whose names spell any address', function () {
    assert.equal(patternProblem('*.co.uk'), 'would allow every domain under co.uk, where anyone can register one (name the domains)');
    assert.equal(patternProblem('*.github.io'), 'would allow every domain under github.io, where anyone can register one (name the domains)');
    assert.equal(patternProblem('*.nip.io'), 'would allow every address (names under nip.io lead to the address they spell; name the domains)');
    assert.equal(patternProblem('*.sslip.io'), 'would allow every address (names under sslip.io lead to the address they spell; name the domains)');
    // A registered domain under a public suffix is anyone's own, and its subdomains are its owner's.
    assert.equal(patternProblem('*.example.co.uk'), undefined);
    assert.equal(patternProblem('*.pages.github.io'), undefined);
    assert.equal(patternProblem('co.uk'), undefined);
  });

  it('turns the network off for a deny pattern it cannot read: dropping it would widen the list', function () {
    const r = networkPolicy(['*.example.com'], ['evil.example.com#', 'bad.example.com']);
    assert.equal(r.policy, undefined);
    assert.equal(r.denyInvalid, true);
    assert.deepEqual(r.problems, [
      'network.deny: "evil.example.com#" has "#", which no domain name has; the sandbox has no network until it is corrected (dropping it would allow what it denies).',
    ]);
    // A bad allow pattern is only dropped: what is left is narrower, never wider.
    const narrower = networkPolicy(['*.example.com', 'x.org#'], ['bad.example.com']);
    assert.deepEqual(narrower.policy, { allow: ['*.example.com'], deny: ['bad.example.com'] });
    assert.equal(narrower.denyInvalid, false);
  });

  it('drops every pattern that names no domain, with the reason, never widening the list', function () {
    const cases: [string, string][] = [
      ['https://index.example.org', 'has a scheme (write the domain alone, as index.example.org)'],
      ['index.example.org/simple', 'has a path (write the domain alone, as index.example.org)'],
      ['index.example.org:443', 'has a port (write the domain alone; ports 80 and 443 are allowed)'],
      ['index .example.org', 'has a space in it'],
      ['*', 'would allow every domain (name the domains)'],
      ['*.com', 'would allow a whole top-level domain (name the domains)'],
      ['10.0.0.1', 'is an IP address (name a domain: addresses are never allowed)'],
      ['[::1]', 'is an IP address (name a domain: addresses are never allowed)'],
      ['::1', 'is an IP address (name a domain: addresses are never allowed)'],
      ['api.*.example.com', 'has a * that is not its first label (write *.example.com)'],
      ['-bad.example', 'is not a domain name'],
      ['', 'is empty'],
    ];
    for (const [raw, why] of cases) assert.equal(patternProblem(raw), why, raw);
    const lists = domainLists(['https://index.example.org', '*'], ['10.0.0.1']);
    assert.deepEqual(lists.allow, []);
    assert.deepEqual(lists.deny, []);
    assert.deepEqual(lists.problems, [
      'network.allow: "https://index.example.org" has a scheme (write the domain alone, as index.example.org); it is ignored.',
      'network.allow: "*" would allow every domain (name the domains); it is ignored.',
      'network.deny: "10.0.0.1" is an IP address (name a domain: addresses are never allowed); the sandbox has no network until it is corrected (dropping it would allow what it denies).',
    ]);
  });

  it('judges a name: the deny-list wins, *.domain is its subdomains only, addresses are never names', function () {
    const lists = domainLists(['index.example.org', '*.example.com'], ['evil.example.com']);
    assert.deepEqual(judge(lists, 'Index.Example.org.'), { allowed: true, by: lists.allow[0] });
    assert.deepEqual(judge(lists, 'a.b.example.com'), { allowed: true, by: lists.allow[1] });
    assert.deepEqual(judge(lists, 'example.com'), { allowed: false, reason: 'not listed' });
    assert.deepEqual(judge(lists, 'notexample.com'), { allowed: false, reason: 'not listed' });
    assert.deepEqual(judge(lists, 'evil.example.com'), { allowed: false, reason: 'denied', by: lists.deny[0] });
    assert.deepEqual(judge(lists, 'x.index.example.org'), { allowed: false, reason: 'not listed' });
    assert.deepEqual(judge(lists, '127.0.0.1'), { allowed: false, reason: 'not a name' });
    assert.deepEqual(judge(lists, '[::1]'), { allowed: false, reason: 'not a name' });
  });
});
