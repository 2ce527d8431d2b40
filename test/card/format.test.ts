/** The card's wording and its image check, as plain functions (no browser). */
import * as assert from 'node:assert/strict';
import { bytes, duration, leftOut, lineCount, runningLine, statusLine } from '../../src/mcp/card/page/format';
import { imageUrl } from '../../src/mcp/card/page/images';

describe('run card wording', function () {
  it('says how each run ended, with the exit code when it is not 0', function () {
    const line = (status: Parameters<typeof statusLine>[0]['status'], exitCode: number | null, durationMs: number) => statusLine({ status, exitCode, durationMs });
    assert.deepEqual(
      [
        line('ok', 0, 2300),
        line('failed', 1, 812),
        line('failed', null, 812),
        line('timeout', -9, 30_000),
        line('stopped', null, 4_150),
        line('memory', 137, 3_200),
        line('output', 0, 1_200),
      ],
      [
        'Finished in 2.3 s',
        'Failed after 0.8 s · exit code 1',
        'Failed after 0.8 s',
        'Stopped at the time limit after 30.0 s',
        'Stopped after 4.1 s',
        'Out of memory after 3.2 s',
        'Stopped at the output limit after 1.2 s',
      ],
    );
  });

  it('words times, sizes, lines and what was left out', function () {
    assert.deepEqual([0, 99, 450, 59_990, 65_000, 3_725_000, -5, NaN].map(duration), ['0.0 s', '0.0 s', '0.4 s', '59.9 s', '1 min 5 s', '1 h 2 min', '0.0 s', '0.0 s']);
    assert.deepEqual([0, 1023, 1024, 11_264, 2_483_112, 5 * 1024 ** 3].map(bytes), ['0 B', '1,023 B', '1.0 KB', '11 KB', '2.4 MB', '5.0 GB']);
    assert.deepEqual(['', 'print(1)', 'a\nb\n', 'a\r\nb\r\nc', '\n'].map(lineCount), [0, 1, 2, 3, 1]);
    assert.deepEqual([runningLine('print(1)\n'), runningLine('a\nb\nc'), runningLine(undefined), runningLine('  ')], [
      'Running 1 line of Python…',
      'Running 3 lines of Python…',
      'Running Python…',
      'Running Python…',
    ]);
    assert.deepEqual([leftOut(0), leftOut(1), leftOut(12_345)], ['', '1 character left out', '12,345 characters left out']);
  });

  it('makes a data: URL only of an image type and of base64', function () {
    assert.equal(imageUrl('image/png', 'iVBORw0KGgo='), 'data:image/png;base64,iVBORw0KGgo=');
    assert.equal(imageUrl('IMAGE/SVG+XML; charset=utf-8', 'PHN2Zz4='), 'data:image/svg+xml;base64,PHN2Zz4=');
    assert.deepEqual(
      [
        imageUrl('text/html', 'PGI+'),
        imageUrl('image/png', 'iVBOR"><script>'),
        imageUrl('image/png', 'abc'),
        imageUrl('image/png,text/html', 'PGI+'),
        imageUrl('application/octet-stream', 'PGI+'),
      ],
      [undefined, undefined, undefined, undefined, undefined],
    );
  });
});
