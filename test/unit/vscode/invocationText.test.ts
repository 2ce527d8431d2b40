import * as assert from 'node:assert/strict';
import { confirmationText, goingBackOf, invocationMessage, type InvocationFacts } from '../../../src/vscode/invocationText';

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

  it('says when the chat goes back first (a replay runs earlier programs again), and when the model sets the person\'s choice aside', function () {
    const question = (goingBack: InvocationFacts['goingBack']) => confirmationText({ ...base, code: 'x', ...(goingBack ? { goingBack } : {}) }).split('\n')[0];
    const asked = 'The program (1 line) runs in the sandbox `img`, chat 3f2a. It gets none of your files. It has no network.';
    assert.equal(
      question({ by: 'model', calls: 2 }),
      `${asked} First the chat's state goes back 2 kept calls: in a new sandbox, its earlier kept calls run again, with the workspace files as they are now and the allow-list of today.`,
    );
    assert.equal(
      question({ by: 'person' }),
      `${asked} First the chat's state goes back to the run you chose in the CodeAct Sandbox view: in a new sandbox, its earlier kept calls run again, with the workspace files as they are now and the allow-list of today.`,
    );
    assert.equal(
      question({ by: 'person', setAsideBy: 'reset' }),
      `${asked} The model's \`reset\` comes first, so the chat does not go back to the run you chose in the CodeAct Sandbox view (the model is told).`,
    );
    assert.equal(invocationMessage({ ...base, goingBack: { by: 'model', calls: 1 } }), 'Running 2 lines of Python in the sandbox `img`, chat 3f2a, after going back 1 kept call');
    assert.equal(invocationMessage({ ...base, goingBack: { by: 'person' } }), 'Running 2 lines of Python in the sandbox `img`, chat 3f2a, after going back to the run you chose');
    assert.equal(invocationMessage({ ...base, goingBack: { by: 'person', setAsideBy: 'rewind' } }), invocationMessage(base));

    // From the input as the model gave it, before it is checked.
    assert.deepEqual(goingBackOf({ rewind: 3 }, true, false), { goingBack: { by: 'model', calls: 3 } });
    assert.deepEqual(goingBackOf({ rewind: 3 }, false, false), {});
    assert.deepEqual(goingBackOf({ rewind: '3' }, true, false), {});
    assert.deepEqual(goingBackOf({ rewind: 3, reset: true }, true, false), {});
    assert.deepEqual(goingBackOf({}, true, true), { goingBack: { by: 'person' } });
    assert.deepEqual(goingBackOf({ reset: true }, true, true), { goingBack: { by: 'person', setAsideBy: 'reset' } });
    assert.deepEqual(goingBackOf({ rewind: 1 }, true, true), { goingBack: { by: 'person', setAsideBy: 'rewind' } });
  });

  it("says when the chat first starts from another chat's state (that chat's programs run again here), and when the token is not one offered", function () {
    const question = (goingBack: InvocationFacts['goingBack']) => confirmationText({ ...base, code: 'x', ...(goingBack ? { goingBack } : {}) }).split('\n')[0];
    const asked = 'The program (1 line) runs in the sandbox `img`, chat 3f2a. It gets none of your files. It has no network.';
    assert.equal(
      question({ by: 'startFrom', run: '1/2/2026, 3:04:05 AM' }),
      `${asked} First this chat starts from the state another chat had after its run of 1/2/2026, 3:04:05 AM, which you chose in the CodeAct Sandbox view: in a new sandbox, that chat's kept calls run again, with the workspace files as they are now and the allow-list of today.`,
    );
    assert.equal(
      question({ by: 'startFrom' }),
      `${asked} The model asks to start from another chat's state with a token that is not one you offered from the CodeAct Sandbox view (or is more than a day old): the call is refused.`,
    );
    assert.equal(
      invocationMessage({ ...base, goingBack: { by: 'startFrom', run: '1/2/2026, 3:04:05 AM' } }),
      "Running 2 lines of Python in the sandbox `img`, chat 3f2a, after starting from another chat's state after its run of 1/2/2026, 3:04:05 AM",
    );
    const label = (token: string) => (token === 'a.b.c.d' ? 'then' : undefined);
    assert.deepEqual(goingBackOf({ startFrom: 'a.b.c.d' }, true, false, label), { goingBack: { by: 'startFrom', run: 'then' } });
    assert.deepEqual(goingBackOf({ startFrom: 'made.up' }, true, false, label), { goingBack: { by: 'startFrom' } });
    assert.deepEqual(goingBackOf({ startFrom: 'a.b.c.d' }, false, false, label), {});
    // Refused at the call with reset or rewind: the question says what the input says without it.
    assert.deepEqual(goingBackOf({ startFrom: 'a.b.c.d', reset: true }, true, false, label), {});
    assert.deepEqual(goingBackOf({ startFrom: 'a.b.c.d' }, true, true, label), { goingBack: { by: 'person', setAsideBy: 'startFrom' } });
  });
});
