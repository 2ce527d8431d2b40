import * as assert from 'node:assert/strict';
import { confirmationText, invocationMessage, type InvocationFacts } from '../../../src/vscode/invocationText';

const base: InvocationFacts = { code: 'import csv\nprint(1)\n', files: [], outputs: [], where: 'sandbox `img`, chat 3f2a', allowed: [], building: false };

describe('what chat shows before a call (unit)', function () {
  it('names the lines of code, the files shared, the outputs declared, and a build the call waits for', function () {
    assert.equal(invocationMessage(base), 'Running 2 lines of Python in the sandbox `img`, chat 3f2a');
    assert.equal(
      invocationMessage({ ...base, code: 'print(1)', files: ['data/sales.csv'], outputs: ['chart.png'], building: true }),
      'Running 1 line of Python in the sandbox `img`, chat 3f2a, with `data/sales.csv`, saving `chart.png` (first, the sandbox image is built: a few minutes, once)',
    );
    assert.equal(
      invocationMessage({ ...base, files: ['a', 'b', 'c', 'd', 'e', 'f', 'g'] }),
      'Running 2 lines of Python in the sandbox `img`, chat 3f2a, with `a`, `b`, `c`, `d`, `e` and 2 more',
    );
  });

  it('asks with what is true of the call: never "no network" when domains are allowed, never "no files" when some are shared', function () {
    assert.equal(confirmationText(base), 'The program (2 lines) runs in the sandbox `img`, chat 3f2a. It gets none of your files. It has no network.\n\n```python\nimport csv\nprint(1)\n\n```');
    assert.equal(
      confirmationText({ ...base, code: 'x', files: ['data/sales.csv'], outputs: ['chart.png'], allowed: ['*.pypi.example', 'files.example.org'] }),
      'The program (1 line) runs in the sandbox `img`, chat 3f2a. It gets a copy of `data/sales.csv` from your workspace, and no other file of yours. It declares `chart.png` as outputs, saved in the CodeAct Sandbox view. It may reach `*.pypi.example`, `files.example.org` through the recording proxy, and nothing else on the network.\n\n```python\nx\n```',
    );
    // A backtick in a name cannot end its code span early.
    assert.match(confirmationText({ ...base, files: ['a`b.csv'] }), /a copy of `a'b\.csv`/);
  });
});
