import * as assert from 'node:assert/strict';
import { domainLists, judge, patternProblem } from '../../../src/core/network/domains';

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
    assert.deepEqual(lists.problems, []);
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
      'network.deny: "10.0.0.1" is an IP address (name a domain: addresses are never allowed); it is ignored.',
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
