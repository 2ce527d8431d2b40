import * as assert from 'node:assert/strict';
import { USAGE, UsageError, number, one, parse } from '../../src/cli/options';

describe('command-line options (unit)', () => {
  const parsed = (argv: string[]) => {
    const p = parse(argv);
    return [p.command, Object.fromEntries(p.flags), p.positional];
  };
  const refused = (argv: string[]) => assert.throws(() => parse(argv), UsageError);

  it('reads values in both forms, repeats, flags and positionals; an empty value is a value', () => {
    assert.deepEqual(parsed(['run', '--file', 'a.csv', '--file=b.csv', '--preload', '', '--verbose', '-']), [
      'run',
      { file: ['a.csv', 'b.csv'], preload: [''], verbose: ['true'] },
      ['-'],
    ]);
    assert.deepEqual(parsed([]), ['help', {}, []]);
  });

  it('says which option is unknown or lacks its value, in its own words', () => {
    assert.throws(() => parse(['run', '--frobnicate', 'x.py']), { message: 'unknown option --frobnicate' });
    assert.throws(() => parse(['run', '-v']), { message: 'unknown option -v' });
    assert.throws(() => parse(['run', '--image']), { message: '--image needs a value' });
    refused(['mcp', '--idle-minutes']);
  });

  it('takes a once-only option once, and numbers within their range', () => {
    assert.throws(() => one(parse(['run', '--session', 'a', '--session', 'b']), 'session'), { message: '--session given more than once' });
    assert.equal(number(parse(['run', '--timeout', '30']), 'timeout', 120, 1, 86_400), 30);
    assert.equal(number(parse(['run']), 'timeout', 120, 1, 86_400), 120);
    assert.throws(() => number(parse(['run', '--timeout', '-5']), 'timeout', 120, 1, 86_400), { message: '--timeout must be a number from 1 to 86400' });
  });

  it('lists every option of the table in the usage, aligned', () => {
    assert.match(USAGE, /^ {2}--image IMAGE {8}run exactly this image/m);
    assert.match(USAGE, /^ {2}--docker-cert-path DIR {2}folder with ca\.pem/m);
    assert.match(USAGE, /^ {2}--idle-minutes N {5}remove the sandbox after this long idle \(default 15; 0: at disconnect\)$/m);
  });
});
