import * as assert from 'node:assert/strict';
import { domainLists, judge, patternProblem } from '../../../src/core/network/domains';

describe('network allow-list patterns', function () {
  it('takes domains and *.domains, in any case, as ASCII', function () {
    const lists = domainLists(['PyPI.org', '*.githubusercontent.com', 'files.pythonhosted.org.', 'bücher.example', 'pypi.org'], []);
    assert.deepEqual(
      lists.allow.map((p) => [p.domain, p.subdomains]),
      [
        ['pypi.org', false],
        ['githubusercontent.com', true],
        ['files.pythonhosted.org', false],
        ['xn--bcher-kva.example', false],
      ],
    );
    assert.deepEqual(lists.problems, []);
  });

  it('drops every pattern that names no domain, with the reason, never widening the list', function () {
    const cases: [string, string][] = [
      ['https://pypi.org', 'has a scheme (write the domain alone, as pypi.org)'],
      ['pypi.org/simple', 'has a path (write the domain alone, as pypi.org)'],
      ['pypi.org:443', 'has a port (write the domain alone; ports 80 and 443 are allowed)'],
      ['pypi .org', 'has a space in it'],
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
    const lists = domainLists(['https://pypi.org', '*'], ['10.0.0.1']);
    assert.deepEqual(lists.allow, []);
    assert.deepEqual(lists.deny, []);
    assert.deepEqual(lists.problems, [
      'network.allow: "https://pypi.org" has a scheme (write the domain alone, as pypi.org); it is ignored.',
      'network.allow: "*" would allow every domain (name the domains); it is ignored.',
      'network.deny: "10.0.0.1" is an IP address (name a domain: addresses are never allowed); it is ignored.',
    ]);
  });

  it('judges a name: the deny-list wins, *.domain is its subdomains only, addresses are never names', function () {
    const lists = domainLists(['pypi.org', '*.example.com'], ['evil.example.com']);
    assert.deepEqual(judge(lists, 'PyPI.org.'), { allowed: true, by: lists.allow[0] });
    assert.deepEqual(judge(lists, 'a.b.example.com'), { allowed: true, by: lists.allow[1] });
    assert.deepEqual(judge(lists, 'example.com'), { allowed: false, reason: 'not listed' });
    assert.deepEqual(judge(lists, 'notexample.com'), { allowed: false, reason: 'not listed' });
    assert.deepEqual(judge(lists, 'evil.example.com'), { allowed: false, reason: 'denied', by: lists.deny[0] });
    assert.deepEqual(judge(lists, 'x.pypi.org'), { allowed: false, reason: 'not listed' });
    assert.deepEqual(judge(lists, '127.0.0.1'), { allowed: false, reason: 'not a name' });
    assert.deepEqual(judge(lists, '[::1]'), { allowed: false, reason: 'not a name' });
  });
});
